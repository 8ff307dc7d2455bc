//! KUDO's output shapes: trees (as `treeprint` draws them), tables (as `uitable` pads
//! them) and `-o yaml|json` documents (as `kubectl-kudo`'s `output` package writes them).

use std::fmt::Write as _;

use serde::Serialize;

/// `-o` / `--output`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    /// YAML documents.
    Yaml,
    /// Indented JSON.
    Json,
}

/// A tree: a label and its branches.
#[derive(Debug, Default)]
pub(crate) struct Tree {
    label: String,
    children: Vec<Tree>,
}

impl Tree {
    /// A tree whose root is drawn as `label` (treeprint's default root is `.`).
    pub(crate) fn new(label: impl Into<String>) -> Tree {
        Tree {
            label: label.into(),
            children: Vec::new(),
        }
    }

    /// Adds a branch and returns it.
    pub(crate) fn add(&mut self, label: impl Into<String>) -> &mut Tree {
        self.children.push(Tree::new(label));
        self.children.last_mut().expect("just pushed")
    }

    /// The tree as treeprint's `String()`: the root, then `├── `/`└── ` branches, each
    /// line ending with a newline; below a branch that is not the last, treeprint indents
    /// with `│`, two no-break spaces and a space.
    pub(crate) fn render(&self) -> String {
        let mut out = format!("{}\n", self.label);
        draw(&self.children, "", &mut out);
        out
    }
}

fn draw(children: &[Tree], prefix: &str, out: &mut String) {
    for (i, child) in children.iter().enumerate() {
        let last = i + 1 == children.len();
        let (edge, indent) = if last {
            ("└── ", "    ")
        } else {
            ("├── ", "│\u{a0}\u{a0} ")
        };
        let _ = writeln!(out, "{prefix}{edge}{}", child.label);
        draw(&child.children, &format!("{prefix}{indent}"), out);
    }
}

/// A table as uitable draws it: every cell padded to its column's width, cells separated
/// by a tab, rows by newlines (no newline after the last row).
pub(crate) fn table(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    rows.iter()
        .map(|r| {
            r.iter()
                .enumerate()
                .map(|(c, cell)| format!("{cell:<width$}", width = widths[c]))
                .collect::<Vec<_>>()
                .join("\t")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// One object as `-o yaml` (followed by a blank line, as KUDO's `Fprintln`) or `-o json`.
pub(crate) fn object<T: Serialize>(value: &T, format: Format) -> anyhow::Result<String> {
    Ok(match format {
        Format::Yaml => format!("{}\n", serde_yaml::to_string(value)?),
        Format::Json => format!("{}\n", serde_json::to_string_pretty(value)?),
    })
}

/// Several objects: YAML documents each after `---` and `...` at the end, or a JSON array.
pub(crate) fn objects<T: Serialize>(values: &[T], format: Format) -> anyhow::Result<String> {
    Ok(match format {
        Format::Yaml => {
            let mut out = String::new();
            for v in values {
                out.push_str("---\n");
                out.push_str(&object(v, format)?);
            }
            out.push_str("...\n");
            out
        }
        Format::Json => object(&values, format)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trees_draw_like_treeprint() {
        let mut root = Tree::new(".");
        let op = root.add("some-operator");
        op.add("some-operator-0.1.0").add("test");
        op.add("other");
        root.add("last").add("child");
        assert_eq!(
            root.render(),
            ".\n├── some-operator\n│\u{a0}\u{a0} ├── some-operator-0.1.0\n│\u{a0}\u{a0} │\u{a0}\u{a0} └── test\n│\u{a0}\u{a0} └── other\n└── last\n    └── child\n"
        );
    }

    #[test]
    fn tables_pad_every_cell_like_uitable() {
        let rows = vec![
            vec![
                "Name".into(),
                "Default".into(),
                "Required".into(),
                "Immutable".into(),
            ],
            vec!["cpus".into(), "0.25".into(), "true".into(), "false".into()],
            vec!["memory".into(), "1Gi".into(), "true".into(), "false".into()],
        ];
        assert_eq!(
            table(&rows),
            "Name  \tDefault\tRequired\tImmutable\ncpus  \t0.25   \ttrue    \tfalse    \nmemory\t1Gi    \ttrue    \tfalse    "
        );
    }
}
