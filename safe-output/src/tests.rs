use super::*;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("safe-output-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn atomic_file_appears_only_on_commit() {
    let d = scratch("file");
    let p = d.join("a.csv");
    fs::write(&p, "old").unwrap();
    let mut f = AtomicFile::create(&p).unwrap();
    f.write_all(b"new contents").unwrap();
    assert_eq!(fs::read_to_string(&p).unwrap(), "old");
    f.commit().unwrap();
    assert_eq!(fs::read_to_string(&p).unwrap(), "new contents");
    assert_eq!(names(&d), ["a.csv"]);
}

#[test]
fn dropped_atomic_file_leaves_the_old_one_and_no_temporary() {
    let d = scratch("drop");
    let p = d.join("a.csv");
    fs::write(&p, "old").unwrap();
    {
        let mut f = AtomicFile::create(&p).unwrap();
        f.write_all(b"half").unwrap();
    }
    assert_eq!(fs::read_to_string(&p).unwrap(), "old");
    assert_eq!(names(&d), ["a.csv"]);
}

#[test]
fn missing_parent_is_named() {
    let d = scratch("parent");
    let e = AtomicFile::create(&d.join("nope/a.csv")).unwrap_err();
    assert!(e.to_string().contains("does not exist"), "{e}");
}

#[test]
fn output_dir_replaces_a_previous_output_without_stale_files() {
    let d = scratch("dir");
    let out = d.join("out");
    let o = OutputDir::begin(&out, false).unwrap();
    fs::write(o.path().join("predicted.7.log"), "eight PEs").unwrap();
    o.finish("{}").unwrap();
    assert_eq!(names(&out), ["predicted.7.log", MARKER]);
    assert_eq!(check_dir(&out, false).unwrap(), DirState::Previous);

    let o = OutputDir::begin(&out, false).unwrap();
    fs::write(o.path().join("predicted.1.log"), "two PEs").unwrap();
    // Until the finish, the previous output is intact.
    assert_eq!(names(&out), ["predicted.7.log", MARKER]);
    o.finish("{}").unwrap();
    assert_eq!(names(&out), ["predicted.1.log", MARKER]);
    assert_eq!(names(&d), ["out"], "no staging or old folder left");
}

#[test]
fn abandoned_output_dir_leaves_the_previous_one() {
    let d = scratch("abandon");
    let out = d.join("out");
    let o = OutputDir::begin(&out, false).unwrap();
    fs::write(o.path().join("a"), "1").unwrap();
    o.finish("{}").unwrap();
    {
        let o = OutputDir::begin(&out, false).unwrap();
        fs::write(o.path().join("b"), "2").unwrap();
    }
    assert_eq!(names(&out), ["a", MARKER]);
    assert_eq!(names(&d), ["out"]);
}

#[test]
fn foreign_folder_needs_force_and_keeps_its_files() {
    let d = scratch("foreign");
    let out = d.join("mine");
    fs::create_dir(&out).unwrap();
    fs::write(out.join("notes.txt"), "keep me").unwrap();
    let e = OutputDir::begin(&out, false).unwrap_err();
    assert!(matches!(e, OutputError::Foreign { .. }), "{e}");
    assert!(e.to_string().contains("--force"), "{e}");
    let o = OutputDir::begin(&out, true).unwrap();
    fs::write(o.path().join("pe.csv"), "x").unwrap();
    o.finish("{}").unwrap();
    assert_eq!(names(&out), ["notes.txt", "pe.csv", MARKER]);
}

#[test]
fn a_file_is_not_an_output_folder() {
    let d = scratch("notdir");
    let f = d.join("x");
    fs::write(&f, "").unwrap();
    assert!(matches!(
        check_dir(&f, true),
        Err(OutputError::NotADir { .. })
    ));
    assert_eq!(check_dir(&d.join("new"), false).unwrap(), DirState::Absent);
    fs::create_dir(d.join("empty")).unwrap();
    assert_eq!(check_dir(&d.join("empty"), false).unwrap(), DirState::Empty);
    let o = OutputDir::begin(&d.join("empty"), false).unwrap();
    o.finish("{}").unwrap();
    assert_eq!(names(&d.join("empty")), [MARKER]);
}

#[test]
fn leftovers_of_dead_processes_are_removed() {
    let d = scratch("stale");
    let out = d.join("out");
    // pid 0 is never a process; pid of this process is alive.
    fs::create_dir_all(d.join(".out.whatif-staging.0")).unwrap();
    fs::create_dir_all(d.join(".out.whatif-old.0")).unwrap();
    let alive = d.join(format!(".out.whatif-tmp.{}", std::process::id()));
    fs::write(&alive, "").unwrap();
    fs::create_dir_all(d.join(".other.whatif-staging.0")).unwrap();
    let o = OutputDir::begin(&out, false).unwrap();
    o.finish("{}").unwrap();
    if Path::new("/proc/self").exists() {
        let mut want = vec![
            ".other.whatif-staging.0".to_string(),
            format!(".out.whatif-tmp.{}", std::process::id()),
            "out".to_string(),
        ];
        want.sort();
        assert_eq!(names(&d), want);
    }
}

#[test]
fn a_dead_runs_temporary_file_goes_and_its_set_aside_output_comes_back() {
    let d = scratch("stale-tmp");
    // A killed single-file write left its temporary file: the next write of that file removes it.
    let f = d.join("tl.csv");
    fs::write(d.join(".tl.csv.whatif-tmp.0"), "half").unwrap();
    write_atomic(&f, b"whole").unwrap();
    if Path::new("/proc/self").exists() {
        assert_eq!(names(&d), ["tl.csv"]);
    }
    // A run killed between its two final renames: the previous output aside, none in place.
    let out = d.join("out");
    let old = d.join(".out.whatif-old.0");
    fs::create_dir_all(&old).unwrap();
    fs::write(old.join(MARKER), "{}").unwrap();
    fs::write(old.join("a.csv"), "previous").unwrap();
    let o = OutputDir::begin(&out, false).unwrap();
    drop(o);
    if Path::new("/proc/self").exists() {
        assert_eq!(fs::read_to_string(out.join("a.csv")).unwrap(), "previous");
    }
}

#[test]
fn a_device_is_written_to_never_replaced() {
    // `--timeline /dev/null` (or `/dev/zero`, or a link to one, as `/dev/stdout` is to a
    // terminal or pipe): written to in place. A rename there would replace the device node
    // when run as root (a fuzz case once turned /dev/zero into a 2 KB file).
    use std::os::unix::fs::FileTypeExt;
    let dir = scratch("device");
    let link = dir.join("null-link");
    for dev in ["/dev/null", "/dev/zero"] {
        let dev = Path::new(dev);
        if !std::fs::metadata(dev).is_ok_and(|m| m.file_type().is_char_device()) {
            eprintln!("skipping {}: not a character device here", dev.display());
            continue;
        }
        assert!(check_file(dev).is_ok());
        let mut f = AtomicFile::create(dev).unwrap();
        f.write_all(b"discarded\n").unwrap();
        f.commit().unwrap();
        write_atomic(dev, b"again").unwrap();
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(dev, &link).unwrap();
        write_atomic(&link, b"through a link").unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink(),
            "the link is kept"
        );
        assert!(std::fs::metadata(dev).unwrap().file_type().is_char_device());
        // Dropped before commit: nothing to clean, the device stays.
        drop(AtomicFile::create(dev).unwrap());
        assert!(std::fs::metadata(dev).unwrap().file_type().is_char_device());
    }
    assert!(
        names(Path::new("/dev"))
            .iter()
            .all(|n| !n.contains(".whatif-tmp."))
    );
    // A socket is refused.
    let sock = dir.join("s.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    assert!(matches!(
        AtomicFile::create(&sock),
        Err(OutputError::NotAFile { .. })
    ));
    // A dangling link is a new file.
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(dir.join("nowhere"), &link).unwrap();
    assert!(check_file(&link).is_ok());
    let _ = std::fs::remove_dir_all(&dir);
}
