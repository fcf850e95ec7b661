//! Old spellings of flags (one name per idea, `docs/CLI.md`): each still works for one
//! release, hidden from `--help`, and says what it is called now.

/// Prints the note for an old spelling `old` of `new` (unless `quiet`).
pub(crate) fn note_old(old: &str, new: &str, quiet: bool) {
    if !quiet {
        eprintln!(
            "note: `{old}` is now spelled `{new}` (one name per idea: docs/CLI.md); the old \
             spelling still works in this release"
        );
    }
}

/// The value of a flag given under its name `new` or its old spelling `old` (with the note).
pub(crate) fn either<T>(
    new: Option<T>,
    old: Option<T>,
    names: (&str, &str),
    quiet: bool,
) -> Option<T> {
    match (new, old) {
        (Some(v), _) => Some(v),
        (None, Some(v)) => {
            note_old(names.0, names.1, quiet);
            Some(v)
        }
        (None, None) => None,
    }
}

/// Notes for old spellings that parse as new ones, from the raw arguments: `--net NAME` of a
/// named machine (one name per idea: `--machine NAME`). Nothing with `-q`/`--quiet`.
pub(crate) fn argv_notes(args: &[String]) {
    if args.iter().any(|a| a == "-q" || a == "--quiet") {
        return;
    }
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let value = match a.strip_prefix("--net=") {
            Some(v) => Some(v.to_string()),
            None if a == "--net" => it.next().cloned(),
            None => None,
        };
        if let Some(v) = value
            && network_models::MACHINES.iter().any(|m| m.0 == v.trim())
        {
            note_old(&format!("--net {v}"), &format!("--machine {v}"), false);
        }
    }
}
