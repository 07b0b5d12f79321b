//! Records the git commit the engine is built from (`cellsim._engine.COMMIT`), so that an
//! installed cellsim (a wheel, `pip install .` from a clone) can name it in its reports
//! without a checkout beside it. Empty when the source is not a git checkout (an sdist).

use std::path::Path;
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let commit = git(dir, &["describe", "--always", "--dirty", "--abbrev=12"]).unwrap_or_default();
    println!("cargo:rustc-env=CELLSIM_COMMIT={commit}");
    println!("cargo:rerun-if-env-changed=CELLSIM_COMMIT");
    // a new commit (HEAD moves, or the branch it names) builds again; so does a change of the
    // index (-dirty). A worktree keeps HEAD and index in its own git dir, the branches in the common one.
    let git_dir = git(dir, &["rev-parse", "--absolute-git-dir"]);
    let common = git(
        dir,
        &["rev-parse", "--path-format=absolute", "--git-common-dir"],
    );
    let head_ref = git(dir, &["symbolic-ref", "-q", "HEAD"]);
    for (base, files) in [
        (git_dir, vec!["HEAD".to_string(), "index".to_string()]),
        (common, {
            let mut v = vec!["packed-refs".to_string()];
            v.extend(head_ref.clone());
            v
        }),
    ] {
        if let Some(base) = base {
            for f in files {
                println!(
                    "cargo:rerun-if-changed={}",
                    Path::new(&base).join(f).display()
                );
            }
        }
    }
}
