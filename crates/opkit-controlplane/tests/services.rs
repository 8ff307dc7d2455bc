//! Service ClusterIP and NodePort allocation with kube-rs: dynamic and requested addresses,
//! conflicts, headless Services, immutability on update, the `kubernetes` Service, and
//! allocations surviving a restart.

mod common;

use std::collections::HashSet;

use k8s_openapi::api::core::v1::{Endpoints, Service};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use opkit_controlplane::{Config, ControlPlane};
use serde_json::{Value, json};

fn service(name: &str, spec: Value) -> Service {
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).unwrap()
}

fn port80() -> Value {
    json!([{"port": 80, "targetPort": 8080}])
}

fn api_error(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn in_service_cidr(ip: &str) -> bool {
    let ip: std::net::Ipv4Addr = ip.parse().unwrap();
    let o = ip.octets();
    o[0] == 10 && (96..112).contains(&o[1])
}

#[tokio::test]
async fn cluster_ip_services_get_unique_addresses_from_the_service_cidr() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let services: Api<Service> = Api::namespaced(client, "default");
    let mut seen = HashSet::new();
    for i in 0..10 {
        let svc = service(
            &format!("s{i}"),
            json!({"selector": {"app": "x"}, "ports": port80()}),
        );
        let created = services.create(&PostParams::default(), &svc).await.unwrap();
        let spec = created.spec.unwrap();
        let ip = spec.cluster_ip.unwrap();
        assert!(in_service_cidr(&ip), "{ip}");
        assert_ne!(ip, "10.96.0.1");
        assert_eq!(spec.cluster_ips.unwrap(), vec![ip.clone()]);
        assert_eq!(spec.ip_families.unwrap(), vec!["IPv4".to_string()]);
        assert_eq!(spec.ip_family_policy.as_deref(), Some("SingleStack"));
        assert!(seen.insert(ip), "addresses are unique");
    }
    // A GET shows the same.
    let got = services.get("s0").await.unwrap();
    assert!(seen.contains(got.spec.unwrap().cluster_ip.as_deref().unwrap()));
}

#[tokio::test]
async fn the_kubernetes_service_has_the_first_address_and_endpoints_at_the_server() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let svc = Api::<Service>::namespaced(client.clone(), "default")
        .get("kubernetes")
        .await
        .unwrap();
    let spec = svc.spec.unwrap();
    assert_eq!(spec.cluster_ip.as_deref(), Some("10.96.0.1"));
    let port = &spec.ports.unwrap()[0];
    assert_eq!(port.port, 443);
    assert_eq!(port.name.as_deref(), Some("https"));
    let ep = Api::<Endpoints>::namespaced(client, "default")
        .get("kubernetes")
        .await
        .unwrap();
    let subset = &ep.subsets.unwrap()[0];
    assert_eq!(
        subset.addresses.as_ref().unwrap()[0].ip,
        plane.addr().ip().to_string()
    );
    assert_eq!(
        i64::from(subset.ports.as_ref().unwrap()[0].port),
        i64::from(plane.addr().port())
    );
}

#[tokio::test]
async fn a_requested_address_is_kept_and_a_taken_one_is_refused() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    let dns = service("dns", json!({"clusterIP": "10.96.0.10", "ports": port80()}));
    let created = services.create(&PostParams::default(), &dns).await.unwrap();
    assert_eq!(created.spec.unwrap().cluster_ips.unwrap(), ["10.96.0.10"]);

    // Taken, in another namespace too.
    let other: Api<Service> = Api::namespaced(client, "kube-system");
    let again = service(
        "dns2",
        json!({"clusterIP": "10.96.0.10", "ports": port80()}),
    );
    let err = api_error(
        other
            .create(&PostParams::default(), &again)
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 422);
    assert_eq!(err.reason, "Invalid");
    assert_eq!(
        err.message,
        "Service \"dns2\" is invalid: spec.clusterIPs: Invalid value: [\"10.96.0.10\"]: failed \
         to allocate IP 10.96.0.10: provided IP is already allocated"
    );

    let outside = service(
        "far",
        json!({"clusterIP": "192.168.1.1", "ports": port80()}),
    );
    let err = api_error(
        services
            .create(&PostParams::default(), &outside)
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 422);
    assert!(
        err.message.contains("is not in the valid range"),
        "{}",
        err.message
    );

    // Deleting frees the address.
    services
        .delete("dns", &DeleteParams::default())
        .await
        .unwrap();
    other.create(&PostParams::default(), &again).await.unwrap();
}

#[tokio::test]
async fn headless_services_keep_none() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let services: Api<Service> = Api::namespaced(client, "default");
    let svc = service(
        "db",
        json!({"clusterIP": "None", "selector": {"app": "db"}, "ports": port80()}),
    );
    let spec = services
        .create(&PostParams::default(), &svc)
        .await
        .unwrap()
        .spec
        .unwrap();
    assert_eq!(spec.cluster_ip.as_deref(), Some("None"));
    assert_eq!(spec.cluster_ips.unwrap(), ["None"]);
    assert_eq!(spec.ip_families.unwrap(), ["IPv4"]);

    let ext = service(
        "ext",
        json!({"type": "ExternalName", "externalName": "example.com"}),
    );
    let spec = services
        .create(&PostParams::default(), &ext)
        .await
        .unwrap()
        .spec
        .unwrap();
    assert_eq!(spec.cluster_ip, None);
}

#[tokio::test]
async fn cluster_ip_is_immutable_but_an_update_without_it_keeps_it() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let services: Api<Service> = Api::namespaced(client, "default");
    let created = services
        .create(
            &PostParams::default(),
            &service(
                "web",
                json!({"selector": {"app": "web"}, "ports": port80()}),
            ),
        )
        .await
        .unwrap();
    let ip = created.spec.as_ref().unwrap().cluster_ip.clone().unwrap();

    // A merge patch changing something else keeps it; so does a PUT that leaves it out.
    let patched = services
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"selector": {"app": "web2"}}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.spec.unwrap().cluster_ip.as_deref(), Some(&*ip));
    let mut put = service(
        "web",
        json!({"selector": {"app": "web3"}, "ports": port80()}),
    );
    put.metadata.resource_version = patched.metadata.resource_version.clone();
    let replaced = services
        .replace("web", &PostParams::default(), &put)
        .await
        .unwrap();
    let spec = replaced.spec.unwrap();
    assert_eq!(spec.cluster_ip.as_deref(), Some(&*ip));
    assert_eq!(spec.cluster_ips.unwrap(), [ip]);

    let err = api_error(
        services
            .patch(
                "web",
                &PatchParams::default(),
                &Patch::Merge(
                    json!({"spec": {"clusterIP": "10.96.0.99", "clusterIPs": ["10.96.0.99"]}}),
                ),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 422);
    assert_eq!(
        err.message,
        "Service \"web\" is invalid: spec.clusterIPs[0]: Invalid value: [\"10.96.0.99\"]: may \
         not change once set"
    );
    // Changing only the singular field is refused the same way.
    let err = api_error(
        services
            .patch(
                "web",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"clusterIP": "10.96.0.99"}})),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 422);
    assert!(
        err.message.contains("may not change once set"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn node_port_services_get_node_ports_and_conflicts_are_refused() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let services: Api<Service> = Api::namespaced(client, "default");
    let svc = service(
        "np",
        json!({"type": "NodePort", "selector": {"app": "x"},
               "ports": [{"name": "http", "port": 80}, {"name": "fixed", "port": 81, "nodePort": 30080}]}),
    );
    let spec = services
        .create(&PostParams::default(), &svc)
        .await
        .unwrap()
        .spec
        .unwrap();
    assert!(in_service_cidr(spec.cluster_ip.as_deref().unwrap()));
    assert_eq!(spec.external_traffic_policy.as_deref(), Some("Cluster"));
    let ports = spec.ports.unwrap();
    let dynamic = ports[0].node_port.unwrap();
    assert!((30000..=32767).contains(&dynamic), "{dynamic}");
    assert_eq!(ports[1].node_port, Some(30080));

    let lb = service(
        "lb",
        json!({"type": "LoadBalancer", "ports": [{"port": 443, "nodePort": 30080}]}),
    );
    let err = api_error(
        services
            .create(&PostParams::default(), &lb)
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 422);
    assert_eq!(
        err.message,
        "Service \"lb\" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided port \
         is already allocated"
    );
    let lb = service(
        "lb",
        json!({"type": "LoadBalancer", "ports": [{"port": 443}]}),
    );
    let spec = services
        .create(&PostParams::default(), &lb)
        .await
        .unwrap()
        .spec
        .unwrap();
    assert_eq!(spec.allocate_load_balancer_node_ports, Some(true));
    assert!(spec.ports.unwrap()[0].node_port.is_some());

    // An update that leaves the node ports out keeps them.
    let patched = services
        .patch(
            "np",
            &PatchParams::apply("other").force(),
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "np"},
                "spec": {"type": "NodePort", "ports": [{"name": "http", "port": 80}, {"name": "fixed", "port": 81}]}})),
        )
        .await
        .unwrap();
    let ports = patched.spec.unwrap().ports.unwrap();
    assert_eq!(ports[0].node_port, Some(dynamic));
    assert_eq!(ports[1].node_port, Some(30080));
}

#[tokio::test]
async fn allocations_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let config = || Config {
        data_dir: Some(dir.path().to_path_buf()),
        listen: "127.0.0.1:0".parse().unwrap(),
        kubeconfig: None,
        history_window: std::time::Duration::from_secs(300),
        controllers: opkit_controlplane::controllers::Settings::default(),
        ..Config::ephemeral()
    };
    {
        let plane = ControlPlane::start(config()).await.unwrap();
        let client = common::client(&plane).await;
        Api::<Service>::namespaced(client, "default")
            .create(
                &PostParams::default(),
                &service("dns", json!({"clusterIP": "10.96.0.10", "ports": port80()})),
            )
            .await
            .unwrap();
        plane.shutdown().await;
    }
    let plane = ControlPlane::start(config()).await.unwrap();
    let client = common::client(&plane).await;
    let services: Api<Service> = Api::namespaced(client, "default");
    let err = api_error(
        services
            .create(
                &PostParams::default(),
                &service(
                    "dns2",
                    json!({"clusterIP": "10.96.0.10", "ports": port80()}),
                ),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 422);
    assert!(
        err.message.contains("provided IP is already allocated"),
        "{}",
        err.message
    );
    // The `kubernetes` Service is still the one from the first start.
    let k = services.get("kubernetes").await.unwrap();
    assert_eq!(k.spec.unwrap().cluster_ip.as_deref(), Some("10.96.0.1"));
}
