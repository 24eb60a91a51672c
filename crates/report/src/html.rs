//! The page: the data as JSON in a `<script type="application/json">`, the stylesheet and the
//! drawing script inlined (assets/report.css, assets/report.js). Nothing is fetched.

use crate::data::Report;
use crate::error::ReportError;

const CSS: &str = include_str!("../assets/report.css");
const JS: &str = include_str!("../assets/report.js");

/// HTML text escaped for an element's content.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// The self-contained page for `r`.
pub fn render(r: &Report) -> Result<String, ReportError> {
    // `</` cannot end the data element early once written as `<\/` (same JSON value).
    let data = serde_json::to_string(r)
        .map_err(ReportError::Embed)?
        .replace("</", "<\\/");
    Ok(format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">\n\
         <title>{title}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n\
         <div id=\"main\"></div>\n<div id=\"tip\" class=\"tip\"></div>\n\
         <noscript>This report draws its tables and charts with JavaScript; the data is in the \
         element with id \"data\".</noscript>\n\
         <script type=\"application/json\" id=\"data\">{data}</script>\n<script>\n{JS}</script>\n\
         </body>\n</html>\n",
        title = escape(&r.title),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{build, Inputs};

    fn profile() -> multios_profile::Profile {
        let text = include_str!("../../../examples/bzip2/profile.json");
        multios_profile::from_json_str("bzip2.json", text).expect("bundled profile")
    }

    #[test]
    fn issue_18_the_page_is_self_contained_and_embeds_the_data() {
        let mut p = profile();
        p.command = vec!["</script><b>x".into()];
        let r = build(&Inputs::new(p, "bzip2.json", "multios report")).expect("build");
        let html = render(&r).expect("render");
        // nothing is fetched: no external script, stylesheet, image or font
        for bad in [
            "src=\"http",
            "href=\"http",
            "<script src",
            "<link",
            "url(",
            "@import",
        ] {
            assert!(!html.contains(bad), "{bad}");
        }
        assert!(
            !html.contains("</script><b>"),
            "the data cannot close the script element"
        );
        let start = html.find("id=\"data\">").expect("data element") + "id=\"data\">".len();
        let end = start + html[start..].find("</script>").expect("end");
        let v: serde_json::Value = serde_json::from_str(&html[start..end]).expect("JSON");
        assert_eq!(v, serde_json::to_value(&r).expect("value"));
    }

    #[test]
    fn issue_18_projections_equal_the_refined_model() {
        let p = profile();
        let r = build(&Inputs::new(p.clone(), "bzip2.json", "multios report")).expect("build");
        assert_eq!(r.projections.len(), 6 * 5 * 4);
        let w = multios_model::Workload::from_profile(&p);
        let cell = r
            .projections
            .iter()
            .find(|c| c.policy == "mckernel" && c.gamma == 2.0 && c.fc == "10us")
            .expect("cell");
        let d = multios_model::Policy::parse("mckernel")
            .expect("policy")
            .delegated(&w);
        let want = multios_model::refined(&w, &d, &multios_model::Params::new(2.0, 10e-6)).expect("refined");
        assert_eq!(cell.speedup, want.speedup);
        assert_eq!(r.cdf.points, multios_model::sweep::syscall_cdf(&w));
    }
}
