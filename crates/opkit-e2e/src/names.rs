//! Generated test namespace names, as kuttl's: `kuttl-<adjective>-<animal>-<4 chars>`, and
//! chainsaw's `chainsaw-<adjective>-<animal>`.

use rand::Rng;

const ADJECTIVES: &[&str] = &[
    "able", "brave", "calm", "clever", "cosmic", "crisp", "daring", "eager", "enormous", "fair",
    "fancy", "fluent", "gentle", "glad", "golden", "grand", "happy", "hardy", "honest", "humble",
    "jolly", "keen", "kind", "lively", "loyal", "lucky", "merry", "mighty", "modest", "neat",
    "nice", "noble", "polite", "proud", "quick", "quiet", "rapid", "ready", "robust", "sharp",
    "shiny", "smart", "solid", "steady", "sunny", "swift", "tidy", "valid", "vivid", "witty",
];

const ANIMALS: &[&str] = &[
    "badger", "beagle", "bison", "bobcat", "camel", "cheetah", "cobra", "condor", "coyote",
    "crane", "dingo", "dolphin", "eagle", "falcon", "ferret", "finch", "gecko", "gibbon", "gopher",
    "heron", "ibis", "iguana", "jackal", "koala", "lemur", "lynx", "magpie", "marmot", "mole",
    "moose", "newt", "ocelot", "otter", "panda", "pelican", "puffin", "quail", "raven", "salmon",
    "seal", "shrew", "sloth", "stork", "termite", "tiger", "toucan", "walrus", "weasel", "wombat",
    "yak",
];

const SUFFIX: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// `<adjective>-<animal>` (chainsaw's namespaces are `chainsaw-<pet name>`).
pub(crate) fn pet_name() -> String {
    let mut rng = rand::rng();
    let adjective = ADJECTIVES[rng.random_range(0..ADJECTIVES.len())];
    let animal = ANIMALS[rng.random_range(0..ANIMALS.len())];
    format!("{adjective}-{animal}")
}

/// A fresh test namespace name.
pub(crate) fn namespace() -> String {
    let mut rng = rand::rng();
    let suffix: String = (0..4)
        .map(|_| SUFFIX[rng.random_range(0..SUFFIX.len())] as char)
        .collect();
    format!("kuttl-{}-{suffix}", pet_name())
}

#[cfg(test)]
mod tests {
    #[test]
    fn namespaces_have_kuttls_shape_and_are_valid_names() {
        let re = regex::Regex::new(r"^kuttl-[a-z]+-[a-z]+-[a-z0-9]{4}$").unwrap();
        for _ in 0..50 {
            let ns = super::namespace();
            assert!(re.is_match(&ns), "{ns}");
            assert!(ns.len() <= 63);
        }
    }
}
