use super::*;
use std::fs;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

const PATIENCE: Duration = Duration::from_secs(5);
const QUIET: Duration = Duration::from_millis(300);

fn watcher() -> (FileWatcher, UnboundedReceiver<WatchEvent>) {
    let (tx, rx) = unbounded_channel();
    let w = FileWatcher::new(tx);
    assert!(!w.is_degraded(), "tests need a working watcher");
    (w, rx)
}

/// Waits until `want` arrives (other events are skipped); fails after `PATIENCE`.
async fn expect(rx: &mut UnboundedReceiver<WatchEvent>, want: WatchEvent) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    let mut seen = Vec::new();
    loop {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(event)) if event == want => return,
            Ok(Some(event)) => seen.push(event),
            Ok(None) => panic!("channel closed waiting for {want:?}; saw {seen:?}"),
            Err(_) => panic!("no {want:?} within {PATIENCE:?}; saw {seen:?}"),
        }
    }
}

/// Waits for `sentinel`, a change made after the ones that must not be reported, and
/// fails if any of `absent` arrives first: the watcher saw the later change, so it
/// saw (and dropped) the earlier ones.
async fn expect_only(
    rx: &mut UnboundedReceiver<WatchEvent>,
    sentinel: WatchEvent,
    absent: &[WatchEvent],
) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(event)) if event == sentinel => return,
            Ok(Some(event)) => assert!(!absent.contains(&event), "reported {event:?}"),
            Ok(None) => panic!("channel closed waiting for {sentinel:?}"),
            Err(_) => panic!("no {sentinel:?} within {PATIENCE:?}"),
        }
    }
}

/// Asserts that nothing at all arrives for a while.
async fn expect_quiet(rx: &mut UnboundedReceiver<WatchEvent>) {
    if let Ok(event) = tokio::time::timeout(QUIET, rx.recv()).await {
        panic!("expected no event, got {event:?}");
    }
}

#[test]
fn is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<FileWatcher>();
}

#[tokio::test]
async fn plain_write_is_changed() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a.txt");
    fs::write(&file, "one\n").unwrap();
    let (w, mut rx) = watcher();
    w.watch_file(&file);

    fs::write(&file, "two\n").unwrap();
    expect(&mut rx, WatchEvent::Changed(file.clone())).await;
}

#[tokio::test]
async fn atomic_save_is_changed_target() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a.txt");
    fs::write(&file, "one\n").unwrap();
    let (w, mut rx) = watcher();
    w.watch_file(&file);

    let tmp = dir.path().join(".a.txt.swp");
    fs::write(&tmp, "two\n").unwrap();
    fs::rename(&tmp, &file).unwrap();
    expect(&mut rx, WatchEvent::Changed(file.clone())).await;

    // The watch survives the inode swap.
    fs::write(&file, "three\n").unwrap();
    expect(&mut rx, WatchEvent::Changed(file.clone())).await;
}

#[tokio::test]
async fn delete_is_removed() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a.txt");
    fs::write(&file, "one\n").unwrap();
    let (w, mut rx) = watcher();
    w.watch_file(&file);

    fs::remove_file(&file).unwrap();
    expect(&mut rx, WatchEvent::Removed(file.clone())).await;
}

#[tokio::test]
async fn rename_away_is_removed() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a.txt");
    fs::write(&file, "one\n").unwrap();
    let (w, mut rx) = watcher();
    w.watch_file(&file);

    fs::rename(&file, dir.path().join("b.txt")).unwrap();
    expect(&mut rx, WatchEvent::Removed(file.clone())).await;
}

#[tokio::test]
async fn removed_directory_reports_its_files_and_can_be_rewatched() {
    let root = tempfile::tempdir().unwrap();
    let sub = root.path().join("sub");
    fs::create_dir(&sub).unwrap();
    let file = sub.join("a.txt");
    fs::write(&file, "one\n").unwrap();
    let (w, mut rx) = watcher();
    w.watch_file(&file);

    fs::remove_dir_all(&sub).unwrap();
    expect(&mut rx, WatchEvent::Removed(file.clone())).await;

    fs::create_dir(&sub).unwrap();
    fs::write(&file, "two\n").unwrap();
    w.watch_file(&file);
    fs::write(&file, "three\n").unwrap();
    expect(&mut rx, WatchEvent::Changed(file.clone())).await;
}

#[tokio::test]
async fn unregistered_sibling_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a.txt");
    fs::write(&file, "one\n").unwrap();
    let (w, mut rx) = watcher();
    w.watch_file(&file);

    // Sorts before the watched file too, so within one batch it would come first.
    let noise = dir.path().join("0-noise.txt");
    fs::write(&noise, "noise\n").unwrap();
    let _ = fs::read_to_string(&file).unwrap();
    fs::write(&file, "two\n").unwrap();
    expect_only(
        &mut rx,
        WatchEvent::Changed(file.clone()),
        &[
            WatchEvent::Changed(noise.clone()),
            WatchEvent::Removed(noise.clone()),
        ],
    )
    .await;
}

#[tokio::test]
async fn unwatch_stops_events_after_the_last_registration() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a.txt");
    fs::write(&file, "one\n").unwrap();
    let (w, mut rx) = watcher();
    w.watch_file(&file);
    w.watch_file(&file);

    w.unwatch_file(&file);
    fs::write(&file, "two\n").unwrap();
    expect(&mut rx, WatchEvent::Changed(file.clone())).await;

    w.unwatch_file(&file);
    // What was sent before the unwatch may still be queued; nothing may follow it.
    while rx.try_recv().is_ok() {}
    fs::write(&file, "three\n").unwrap();
    // A file still watched, changed afterwards, proves the write above was seen.
    let other = dir.path().join("c.txt");
    fs::write(&other, "one\n").unwrap();
    w.watch_file(&other);
    fs::write(&other, "two\n").unwrap();
    expect_only(
        &mut rx,
        WatchEvent::Changed(other.clone()),
        &[WatchEvent::Changed(file.clone())],
    )
    .await;
}

#[tokio::test]
async fn two_files_in_one_directory() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.txt");
    let b = dir.path().join("b.txt");
    fs::write(&a, "a\n").unwrap();
    fs::write(&b, "b\n").unwrap();
    let (w, mut rx) = watcher();
    w.watch_file(&a);
    w.watch_file(&b);

    fs::write(&a, "a2\n").unwrap();
    expect(&mut rx, WatchEvent::Changed(a.clone())).await;
    fs::write(&b, "b2\n").unwrap();
    expect(&mut rx, WatchEvent::Changed(b.clone())).await;

    // The directory stays watched for the file still registered.
    w.unwatch_file(&a);
    fs::write(&b, "b3\n").unwrap();
    expect(&mut rx, WatchEvent::Changed(b.clone())).await;
}

#[tokio::test]
async fn reports_the_path_as_registered() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("sub")).unwrap();
    let file = dir.path().join("a.txt");
    fs::write(&file, "one\n").unwrap();
    let spelled = dir.path().join("sub").join("..").join("a.txt");
    let (w, mut rx) = watcher();
    w.watch_file(&spelled);

    fs::write(&file, "two\n").unwrap();
    expect(&mut rx, WatchEvent::Changed(spelled.clone())).await;
}

#[tokio::test]
async fn watched_directories_report_entries_coming_going_and_changing() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("skills");
    fs::create_dir(&dir).unwrap();
    let (w, mut rx) = watcher();
    w.watch_dir(&dir);
    w.watch_dir(&dir);

    fs::create_dir(dir.join("new")).unwrap();
    expect(&mut rx, WatchEvent::DirChanged(dir.clone())).await;
    fs::write(dir.join("file.md"), "x").unwrap();
    expect(&mut rx, WatchEvent::DirChanged(dir.clone())).await;
    // Deeper levels are not this watch's business.
    fs::write(dir.join("new").join("deep.md"), "x").unwrap();
    expect_quiet(&mut rx).await;

    // Refcounted: one unwatch keeps it, the second ends it.
    w.unwatch_dir(&dir);
    fs::remove_file(dir.join("file.md")).unwrap();
    expect(&mut rx, WatchEvent::DirChanged(dir.clone())).await;
    w.unwatch_dir(&dir);
    while rx.try_recv().is_ok() {}
    fs::write(dir.join("again.md"), "x").unwrap();
    expect_quiet(&mut rx).await;
}

/// The daemon's own files (its log, its database) are never reported, whoever watches
/// them or their directory: each report is logged, and a log line would be the next
/// change. Other files of that directory still are.
#[tokio::test]
async fn the_daemons_own_files_are_never_reported() {
    let root = tempfile::tempdir().unwrap();
    let (a, b) = (root.path().join("a"), root.path().join("b"));
    fs::create_dir(&a).unwrap();
    fs::create_dir(&b).unwrap();
    let (log, db, file) = (a.join("ctxd.log"), a.join("ctxd.db"), a.join("z.txt"));
    for f in [&log, &db, &file] {
        fs::write(f, "0").unwrap();
    }
    let (w, mut rx) = watcher();
    w.ignore_own_files(&[log.clone(), db.clone()]);
    w.watch_dir(&a);
    w.watch_dir(&b);
    w.watch_file(&log);
    w.watch_file(&file);

    // Reported in sorted order within a batch: `a` before the sentinel `b`.
    fs::write(&log, "a log line\n").unwrap();
    fs::write(&db, "a page").unwrap();
    fs::write(b.join("sentinel"), "x").unwrap();
    let in_a = WatchEvent::DirChanged(a.clone());
    expect_only(
        &mut rx,
        WatchEvent::DirChanged(b.clone()),
        std::slice::from_ref(&in_a),
    )
    .await;
    // `ctxd.log` sorts before `z.txt`.
    fs::write(&file, "1").unwrap();
    let log_changed = WatchEvent::Changed(log.clone());
    expect_only(&mut rx, WatchEvent::Changed(file.clone()), &[log_changed]).await;
    fs::write(&file, "2").unwrap();
    expect(&mut rx, in_a).await;
}

#[tokio::test]
async fn a_watched_file_and_its_watched_directory_share_one_os_watch() {
    let root = tempfile::tempdir().unwrap();
    let file = root.path().join("a.txt");
    fs::write(&file, "a").unwrap();
    let (w, mut rx) = watcher();
    w.watch_file(&file);
    w.watch_dir(root.path());
    w.unwatch_dir(root.path());
    fs::write(&file, "b").unwrap();
    expect(&mut rx, WatchEvent::Changed(file.clone())).await;
}

/// A registry holding `files` (all in `dir`, registered under their plain path).
fn registry_with(dir: &Path, files: &[&Path]) -> Registry {
    let mut registry = Registry::default();
    for file in files {
        let key = file.to_path_buf();
        registry.files.insert(
            key.clone(),
            FileEntry {
                dir: dir.to_path_buf(),
                key: key.clone(),
                refs: 1,
            },
        );
        registry.by_key.entry(key.clone()).or_default().insert(key);
        let entry = registry.dirs.entry(dir.to_path_buf()).or_default();
        entry.files += 1;
        entry.armed = true;
    }
    registry
}

fn event(kind: EventKind, paths: &[&Path]) -> Event {
    paths
        .iter()
        .fold(Event::new(kind), |e, p| e.add_path(p.to_path_buf()))
}

#[test]
fn a_batch_reports_each_file_once() {
    use notify::event::{AccessKind, CreateKind, DataChange};
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.txt");
    fs::write(&a, "a\n").unwrap();
    let mut registry = registry_with(dir.path(), &[&a]);
    let batch = [
        event(EventKind::Create(CreateKind::File), &[&a]),
        event(EventKind::Modify(ModifyKind::Data(DataChange::Any)), &[&a]),
        event(EventKind::Access(AccessKind::Any), &[&a]),
        event(EventKind::Modify(ModifyKind::Data(DataChange::Any)), &[&a]),
        event(
            EventKind::Create(CreateKind::File),
            &[&dir.path().join("b.txt")],
        ),
    ];
    assert_eq!(
        translate(&mut registry, &batch),
        vec![WatchEvent::Changed(a.clone())]
    );
}

#[test]
fn access_only_batches_report_nothing() {
    use notify::event::{AccessKind, AccessMode};
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.txt");
    fs::write(&a, "a\n").unwrap();
    let mut registry = registry_with(dir.path(), &[&a]);
    let batch = [
        event(EventKind::Access(AccessKind::Open(AccessMode::Read)), &[&a]),
        event(
            EventKind::Access(AccessKind::Close(AccessMode::Read)),
            &[&a],
        ),
        event(
            EventKind::Modify(ModifyKind::Metadata(MetadataKind::AccessTime)),
            &[&a],
        ),
    ];
    assert_eq!(translate(&mut registry, &batch), vec![]);
}

#[test]
fn renames_map_to_the_state_on_disk() {
    use notify::event::RenameMode;
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.txt");
    let b = dir.path().join("b.txt");
    let tmp = dir.path().join("a.txt.tmp");
    fs::write(&a, "a\n").unwrap();
    let mut registry = registry_with(dir.path(), &[&a, &b]);
    let both = EventKind::Modify(ModifyKind::Name(RenameMode::Both));
    // tmp renamed over a (a exists), b renamed away (b is gone).
    let batch = [event(both, &[&tmp, &a]), event(both, &[&b, &tmp])];
    assert_eq!(
        translate(&mut registry, &batch),
        vec![WatchEvent::Changed(a), WatchEvent::Removed(b)]
    );
}

#[test]
fn rescan_comes_first() {
    use notify::event::{DataChange, Flag};
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.txt");
    fs::write(&a, "a\n").unwrap();
    let mut registry = registry_with(dir.path(), &[&a]);
    let rescan = event(EventKind::Other, &[]).set_flag(Flag::Rescan);
    let batch = [
        event(EventKind::Modify(ModifyKind::Data(DataChange::Any)), &[&a]),
        rescan,
    ];
    assert_eq!(
        translate(&mut registry, &batch),
        vec![WatchEvent::Rescan, WatchEvent::Changed(a)]
    );
}

#[test]
fn a_removed_directory_removes_its_files_and_loses_its_watch() {
    use notify::event::RemoveKind;
    let root = tempfile::tempdir().unwrap();
    let sub = root.path().join("sub");
    let a = sub.join("a.txt");
    let mut registry = registry_with(&sub, &[&a]);
    let batch = [event(EventKind::Remove(RemoveKind::Folder), &[&sub])];
    assert_eq!(
        translate(&mut registry, &batch),
        vec![WatchEvent::Removed(a)]
    );
    let entry = &registry.dirs[&sub];
    assert!(entry.lost && !entry.armed);
}

#[tokio::test]
async fn degraded_watcher_accepts_calls_and_reports_nothing() {
    let (_tx, mut rx) = unbounded_channel::<WatchEvent>();
    let w = FileWatcher {
        debouncer: Mutex::new(None),
        registry: Arc::new(Mutex::new(Registry::default())),
        degraded: AtomicBool::new(true),
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a.txt");
    fs::write(&file, "one\n").unwrap();
    w.watch_file(&file);
    fs::write(&file, "two\n").unwrap();
    w.unwatch_file(&file);
    w.unwatch_file(&file);
    assert!(w.is_degraded());
    expect_quiet(&mut rx).await;
}
