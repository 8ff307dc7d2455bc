//! The hub's HTML, rendered on the server: the package list with the installed operators, and
//! a package's page. Every string from a catalog or the cluster goes through [`esc`] (or, for
//! a CSV's long description, [`markdown`], which escapes raw HTML and drops links of other
//! schemes than http(s) and mailto); forms post to the hub with its CSRF token.

use std::fmt::Write;

use pulldown_cmark::{CowStr, Event, Options, Parser, Tag};

use super::PREFIX;
use super::catalogs::Package;
use crate::extensions::Installed;

/// A message at the top of a page: what an action came to.
pub(crate) enum Flash {
    /// It worked.
    Done(String),
    /// It failed, and why.
    Failed(String),
}

/// `text` escaped for HTML text and attribute values.
pub(crate) fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// CommonMark `text` as HTML, with raw HTML shown as text and unsafe link targets removed.
pub(crate) fn markdown(text: &str) -> String {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    let events = Parser::new_ext(text, options).map(|event| match event {
        Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
        Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        }) => Event::Start(Tag::Link {
            link_type,
            dest_url: safe_url(dest_url),
            title,
            id,
        }),
        Event::Start(Tag::Image {
            link_type,
            dest_url,
            title,
            id,
        }) => Event::Start(Tag::Image {
            link_type,
            dest_url: safe_url(dest_url),
            title,
            id,
        }),
        other => other,
    });
    let mut out = String::new();
    pulldown_cmark::html::push_html(&mut out, events);
    out
}

/// `url` when it is relative or http(s)/mailto; else `#` (no `javascript:` or `data:`).
fn safe_url(url: CowStr<'_>) -> CowStr<'_> {
    let scheme_end = url.find([':', '/', '?', '#']);
    match scheme_end {
        Some(i) if url[i..].starts_with(':') => {
            let scheme = url[..i].to_ascii_lowercase();
            if ["http", "https", "mailto"].contains(&scheme.as_str()) {
                url
            } else {
                CowStr::Borrowed("#")
            }
        }
        _ => url,
    }
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:0;color:#151515;background:#f5f5f5}\
header{background:#151515;color:#fff;padding:12px 24px;font-size:20px}header a{color:#fff;text-decoration:none}\
main{padding:16px 24px;max-width:1100px}h2{font-size:18px;margin:20px 0 8px}\
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(240px,1fr));gap:12px}\
.card{background:#fff;border:1px solid #d2d2d2;border-radius:4px;padding:12px;color:inherit;text-decoration:none;display:block}\
.card:hover{border-color:#06c}.card img,.head img{width:48px;height:48px;float:right}\
.card h3{margin:0 0 4px;font-size:16px}.muted{color:#6a6e73;font-size:13px}\
.tag{display:inline-block;background:#e7f1fa;border-radius:8px;padding:1px 8px;font-size:12px;margin:2px 2px 0 0}\
table{border-collapse:collapse;background:#fff;width:100%}th,td{border:1px solid #d2d2d2;padding:6px 8px;text-align:left;font-size:14px;vertical-align:top}\
form.inline{display:inline-block;margin:0 6px 4px 0}input[type=text]{width:110px}\
.flash{padding:10px 14px;border-radius:4px;margin-bottom:12px;white-space:pre-wrap}\
.ok{background:#f3faf2;border:1px solid #3e8635}.error{background:#faeaea;border:1px solid #c9190b}\
pre{background:#fff;border:1px solid #d2d2d2;padding:8px;overflow:auto;font-size:13px}\
.desc{background:#fff;border:1px solid #d2d2d2;padding:4px 16px}";

/// A whole page.
fn layout(title: &str, flash: Option<&Flash>, body: &str) -> String {
    let flash = match flash {
        Some(Flash::Done(m)) => format!("<div id=\"message\" class=\"flash ok\">{}</div>", esc(m)),
        Some(Flash::Failed(m)) => {
            format!("<div id=\"message\" class=\"flash error\">{}</div>", esc(m))
        }
        None => String::new(),
    };
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head>\
         <body><header><a href=\"{PREFIX}/\">OperatorHub</a> <span class=\"muted\">opkit</span></header><main>{flash}{body}</main></body></html>\n",
        esc(title)
    )
}

fn token_field(token: &str) -> String {
    format!(
        "<input type=\"hidden\" name=\"token\" value=\"{}\">",
        esc(token)
    )
}

/// The icon, when there is one.
fn icon(p: &Package) -> String {
    p.icon
        .as_ref()
        .map(|url| format!("<img alt=\"\" src=\"{}\">", esc(url)))
        .unwrap_or_default()
}

fn tags(items: &[String]) -> String {
    items
        .iter()
        .map(|c| format!("<span class=\"tag\">{}</span>", esc(c)))
        .collect()
}

/// The front page: the installed operators, then the packages of the served catalogs.
pub(crate) fn index(
    packages: &[Package],
    problems: &[String],
    installed: Result<&[Installed], &str>,
    flash: Option<&Flash>,
    token: &str,
) -> String {
    let mut body = String::from("<h2>Installed operators</h2>");
    match installed {
        Err(e) => {
            let _ = write!(body, "<p class=\"flash error\">{}</p>", esc(e));
        }
        Ok([]) => {
            body.push_str("<p class=\"muted\">None yet: install one from the packages below.</p>")
        }
        Ok(rows) => {
            body.push_str("<table id=\"installed\"><tr><th>Name</th><th>Package</th><th>Version</th><th>Revision</th><th>State</th><th>Actions</th></tr>");
            for i in rows {
                let _ = write!(
                    body,
                    "<tr data-extension=\"{name}\"><td>{name}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"state\">{}{}</td><td>{}</td></tr>",
                    esc(&i.package),
                    esc(&i.version),
                    esc(&i.revision),
                    esc(&i.state),
                    if i.message.is_empty() {
                        String::new()
                    } else {
                        format!("<div class=\"muted\">{}</div>", esc(&i.message))
                    },
                    actions(i, token),
                    name = esc(&i.name),
                );
            }
            body.push_str("</table>");
        }
    }
    body.push_str("<h2>Packages</h2>");
    for p in problems {
        let _ = write!(body, "<p class=\"flash error\">{}</p>", esc(p));
    }
    if packages.is_empty() {
        body.push_str("<p class=\"muted\">No served catalog has packages: create a ClusterCatalog (see the README, \"Installing and upgrading operators\").</p>");
    }
    body.push_str("<div class=\"grid\" id=\"packages\">");
    for p in packages {
        let channels: Vec<String> = p
            .channels
            .iter()
            .map(|(c, vs)| format!("{}: {}", esc(c), esc(&vs.join(", "))))
            .collect();
        let _ = write!(
            body,
            "<a class=\"card\" data-package=\"{name}\" href=\"{PREFIX}/packages/{}/{}\">{}<h3>{}</h3>\
             <div class=\"muted\">{} · {} · catalog {}</div><p>{}</p><div>{}{}</div><div class=\"muted\">{}</div></a>",
            path_segment(&p.catalog),
            path_segment(&p.name),
            icon(p),
            esc(&p.display_name),
            if p.provider.is_empty() {
                "unknown provider".into()
            } else {
                esc(&p.provider)
            },
            if p.latest.is_empty() {
                "no version".into()
            } else {
                esc(&p.latest)
            },
            esc(&p.catalog),
            esc(&p.summary),
            capability(p),
            tags(&p.categories),
            channels.join("<br>"),
            name = esc(&p.name),
        );
    }
    body.push_str("</div>");
    layout("OperatorHub", flash, &body)
}

/// The package's capability level as a tag (nothing when the CSV gives none).
fn capability(p: &Package) -> String {
    if p.capabilities.is_empty() {
        String::new()
    } else {
        format!("<span class=\"tag\">{}</span>", esc(&p.capabilities))
    }
}

/// The buttons of one installed operator.
fn actions(i: &Installed, token: &str) -> String {
    let t = token_field(token);
    let name = esc(&i.name);
    let mut out = format!(
        "<form class=\"inline\" method=\"post\" action=\"{PREFIX}/upgrade\">{t}<input type=\"hidden\" name=\"name\" value=\"{name}\">\
         <input type=\"text\" name=\"version\" placeholder=\"range (newest)\"> <button>Upgrade</button></form>"
    );
    if let Some(p) = &i.pending {
        let _ = write!(
            out,
            "<form class=\"inline\" method=\"post\" action=\"{PREFIX}/approve\">{t}<input type=\"hidden\" name=\"name\" value=\"{name}\">\
             <button title=\"{}\">Approve {}</button></form>",
            esc(p),
            esc(p)
        );
    }
    let _ = write!(
        out,
        "<form class=\"inline\" method=\"post\" action=\"{PREFIX}/rollback\">{t}<input type=\"hidden\" name=\"name\" value=\"{name}\">\
         <input type=\"text\" name=\"revision\" placeholder=\"revision (previous)\"> <button>Roll back</button></form>\
         <form class=\"inline\" method=\"post\" action=\"{PREFIX}/uninstall\">{t}<input type=\"hidden\" name=\"name\" value=\"{name}\">\
         <label><input type=\"checkbox\" name=\"purge\"> with CRDs</label> <button>Uninstall</button></form>"
    );
    out
}

/// A package's page: its description, examples, channels and the install form.
pub(crate) fn package(p: &Package, flash: Option<&Flash>, token: &str) -> String {
    let mut body = format!(
        "<div class=\"head\" data-package=\"{name}\">{}<h2>{}</h2><div class=\"muted\">{} · catalog {} · package {name}</div><div>{}{}</div></div>",
        icon(p),
        esc(&p.display_name),
        if p.provider.is_empty() {
            "unknown provider".into()
        } else {
            esc(&p.provider)
        },
        esc(&p.catalog),
        capability(p),
        tags(&p.categories),
        name = esc(&p.name),
    );
    let channel_options: String = p
        .channels
        .iter()
        .map(|(c, _)| {
            let selected = if *c == p.default_channel {
                " selected"
            } else {
                ""
            };
            format!("<option value=\"{c}\"{selected}>{c}</option>", c = esc(c))
        })
        .collect();
    let _ = write!(
        body,
        "<h2>Install</h2><form id=\"install\" method=\"post\" action=\"{PREFIX}/install\">{}\
         <input type=\"hidden\" name=\"package\" value=\"{}\">\
         <label>Name <input type=\"text\" name=\"name\" value=\"{}\"></label> \
         <label>Namespace <input type=\"text\" name=\"namespace\" value=\"{}\"></label> \
         <label>Version range <input type=\"text\" name=\"version\" placeholder=\"newest\"></label> \
         <label>Channel <select name=\"channel\"><option value=\"\">any</option>{channel_options}</select></label> \
         <button>Install</button></form>",
        token_field(token),
        esc(&p.name),
        esc(&p.name),
        esc(&p.name),
    );
    body.push_str("<h2>Channels</h2><table id=\"channels\"><tr><th>Channel</th><th>Versions (newest first)</th></tr>");
    for (c, versions) in &p.channels {
        let default = if *c == p.default_channel {
            " (default)"
        } else {
            ""
        };
        let _ = write!(
            body,
            "<tr><td>{}{default}</td><td>{}</td></tr>",
            esc(c),
            esc(&versions.join(", "))
        );
    }
    body.push_str("</table><h2>Description</h2>");
    if p.description.trim().is_empty() {
        let _ = write!(body, "<div class=\"desc\"><p>{}</p></div>", esc(&p.summary));
    } else {
        let _ = write!(
            body,
            "<div class=\"desc\">{}</div>",
            markdown(&p.description)
        );
    }
    if let Some(examples) = &p.examples {
        let _ = write!(
            body,
            "<h2>Examples (alm-examples)</h2><pre id=\"examples\">{}</pre>",
            esc(examples)
        );
    }
    layout(&p.display_name, flash, &body)
}

/// A page saying `message` (a missing package, a refused form).
pub(crate) fn message(title: &str, flash: &Flash) -> String {
    let body = format!("<p><a href=\"{PREFIX}/\">Back to the hub</a></p>");
    layout(title, Some(flash), &body)
}

/// `segment` percent-encoded for a URL path (catalog and package names are DNS-like, but a
/// catalog may say anything).
pub(crate) fn path_segment(segment: &str) -> String {
    let mut out = String::new();
    for b in segment.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_escapes_raw_html_and_drops_script_links() {
        let html = markdown(
            "# Title\n\n<script>alert(1)</script>\n\nSee [docs](https://example.com) and [x](javascript:alert(1)) <img src=x onerror=alert(1)>\n",
        );
        assert!(html.contains("<h1>Title</h1>"), "{html}");
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{html}"
        );
        assert!(
            html.contains("<a href=\"https://example.com\">docs</a>"),
            "{html}"
        );
        assert!(html.contains("<a href=\"#\">x</a>"), "{html}");
        assert!(
            html.contains("&lt;img src=x onerror=alert(1)&gt;"),
            "{html}"
        );
        assert!(
            !html.contains("<script") && !html.contains("<img"),
            "{html}"
        );
    }

    #[test]
    fn every_catalog_string_on_the_package_list_is_escaped() {
        let evil = "\"><script>alert(1)</script>";
        let p = Package {
            catalog: evil.into(),
            name: evil.into(),
            display_name: evil.into(),
            summary: evil.into(),
            provider: evil.into(),
            capabilities: evil.into(),
            categories: vec![evil.into()],
            channels: vec![(evil.into(), vec![evil.into()])],
            latest: evil.into(),
            ..Package::default()
        };
        let page = index(std::slice::from_ref(&p), &[evil.into()], Ok(&[]), None, "t");
        assert!(!page.contains("<script>"), "{page}");
        let page = package(&p, Some(&Flash::Failed(evil.into())), "t");
        assert!(!page.contains("<script>"), "{page}");
        assert_eq!(path_segment("a b/c"), "a%20b%2Fc");
    }
}
