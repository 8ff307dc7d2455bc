//! The TLS listener: accepts connections, terminates TLS, speaks HTTP/1.1 or HTTP/2 as ALPN
//! agreed and hands every request to the same [`ApiServer::serve`] stack the in-process
//! transport uses.

use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tokio::sync::watch as signal;
use tokio::task::JoinSet;

use crate::request::ConnectionInfo;
use crate::server::ApiServer;

/// Serves `server` on `listener` until `stopped` turns true, then closes open connections.
/// `idle_timeout` bounds the TLS handshake (at most 10 s), HTTP/1.1 header reads and HTTP/2
/// keep-alive pings.
pub async fn serve_tls(
    listener: TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    server: Arc<ApiServer>,
    idle_timeout: Duration,
    mut stopped: signal::Receiver<bool>,
) {
    let mut connections = JoinSet::new();
    loop {
        let accepted = tokio::select! {
            _ = stopped.changed() => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
            a = listener.accept() => a,
        };
        let (tcp, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        let acceptor = acceptor.clone();
        let server = server.clone();
        connections.spawn(async move {
            let handshake = idle_timeout.min(Duration::from_secs(10));
            let tls = match tokio::time::timeout(handshake, acceptor.accept(tcp)).await {
                Ok(Ok(s)) => s,
                _ => return,
            };
            // A client certificate (verified against the CA by the TLS layer) names the user
            // for every request on this connection.
            let identity = tls
                .get_ref()
                .1
                .peer_certificates()
                .and_then(|certs| certs.first())
                .and_then(|cert| crate::auth::identity_from_certificate(cert))
                .map(|user| crate::auth::ClientCertIdentity(Arc::new(user)));
            let info = ConnectionInfo { peer };
            let service = hyper::service::service_fn(move |mut req: http::Request<_>| {
                let server = server.clone();
                req.extensions_mut().insert(info);
                if let Some(identity) = &identity {
                    req.extensions_mut().insert(identity.clone());
                }
                async move { Ok::<_, std::convert::Infallible>(server.serve(req).await) }
            });
            // The protocol is the one ALPN agreed on (clients speaking HTTP/2 over TLS offer
            // it), so no time is spent sniffing a preface from a client that sends nothing.
            let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2".as_slice());
            let io = TokioIo::new(tls);
            if h2 {
                let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                    .timer(hyper_util::rt::TokioTimer::new())
                    .keep_alive_interval(Some(idle_timeout / 4))
                    .keep_alive_timeout(idle_timeout / 4)
                    .serve_connection(io, service)
                    .await;
            } else {
                let _ = hyper::server::conn::http1::Builder::new()
                    .timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(idle_timeout)
                    .serve_connection(io, service)
                    .with_upgrades()
                    .await;
            }
        });
    }
    connections.shutdown().await;
}
