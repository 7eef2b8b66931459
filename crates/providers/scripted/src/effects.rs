//! Tool effects on the working directory, confined to it.
//!
//! A script path is checked twice: lexically (no absolute path, no `..` leaving the directory)
//! and on disk (no existing directory or file on the way that resolves outside it, so a symlink
//! cannot smuggle a write out). Failures become failed tool results, never panics.

use std::io;
use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use crate::script::Effect;

/// The error code of a tool result whose path leaves the working directory.
pub const OUTSIDE_WORKING_DIRECTORY: &str = "pathOutsideWorkingDirectory";
/// The error code of a tool result whose file operation failed.
pub const IO_ERROR: &str = "ioError";

/// Why an effect failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EffectError {
    /// [`OUTSIDE_WORKING_DIRECTORY`], [`IO_ERROR`], or `planMode` (a change refused in plan mode).
    pub code: &'static str,
    /// For the person reading the tool result.
    pub message: String,
}

fn outside(path: &str, why: &str) -> EffectError {
    EffectError {
        code: OUTSIDE_WORKING_DIRECTORY,
        message: format!("refused `{path}`: {why}"),
    }
}

fn io_error(path: &str, error: &io::Error) -> EffectError {
    EffectError {
        code: IO_ERROR,
        message: format!("`{path}`: {error}"),
    }
}

/// What a successful effect produced: the text a `readFile` read, or how much a `writeFile`
/// wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EffectOutput {
    Nothing,
    Wrote { bytes: usize },
    Appended { bytes: usize },
    Read { text: String },
}

/// The lexically normalised relative form of `path`, or why it leaves the working directory.
pub(crate) fn relative_inside(path: &str) -> Result<PathBuf, EffectError> {
    let mut clean = PathBuf::new();
    for component in Path::new(path).components() {
        match component {
            Component::Normal(part) => clean.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                if !clean.pop() {
                    return Err(outside(path, "`..` leaves the working directory"));
                }
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(outside(
                    path,
                    "absolute paths are not allowed; use a path relative to the working directory",
                ));
            }
        }
    }
    if clean.as_os_str().is_empty() {
        return Err(outside(path, "the path names the working directory itself"));
    }
    Ok(clean)
}

/// Runs `effect` inside `working_directory` (on the blocking pool: it touches the disk).
pub(crate) async fn perform(
    working_directory: &Path,
    effect: &Effect,
) -> Result<EffectOutput, EffectError> {
    let working_directory = working_directory.to_owned();
    let effect = effect.clone();
    let path = effect.path().unwrap_or_default().to_owned();
    tokio::task::spawn_blocking(move || perform_blocking(&working_directory, &effect))
        .await
        .unwrap_or_else(|_| {
            Err(EffectError {
                code: IO_ERROR,
                message: format!("`{path}`: the file operation was interrupted"),
            })
        })
}

fn perform_blocking(
    working_directory: &Path,
    effect: &Effect,
) -> Result<EffectOutput, EffectError> {
    match effect {
        Effect::None => Ok(EffectOutput::Nothing),
        Effect::WriteFile(write) => {
            let target = confined(working_directory, &write.path, true)?;
            std::fs::write(&target, &write.content).map_err(|e| io_error(&write.path, &e))?;
            Ok(EffectOutput::Wrote {
                bytes: write.content.len(),
            })
        }
        Effect::AppendFile(append) => {
            use std::io::Write as _;
            let target = confined(working_directory, &append.path, true)?;
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&target)
                .map_err(|e| io_error(&append.path, &e))?;
            // One `write_all` of the whole text: a line appended by one call stays in one piece.
            file.write_all(append.content.as_bytes())
                .map_err(|e| io_error(&append.path, &e))?;
            Ok(EffectOutput::Appended {
                bytes: append.content.len(),
            })
        }
        Effect::ReadFile(read) => {
            let target = confined(working_directory, &read.path, false)?;
            let text = std::fs::read_to_string(&target).map_err(|e| io_error(&read.path, &e))?;
            Ok(EffectOutput::Read { text })
        }
    }
}

/// The absolute file `path` names inside `working_directory`, after checking every existing
/// component on disk; with `create_parents`, missing parent directories are created one level at
/// a time (each checked before the next is made).
fn confined(
    working_directory: &Path,
    path: &str,
    create_parents: bool,
) -> Result<PathBuf, EffectError> {
    let relative = relative_inside(path)?;
    let root = working_directory
        .canonicalize()
        .map_err(|e| io_error(path, &e))?;
    let mut current = root.clone();
    let mut components = relative.components().peekable();
    while let Some(component) = components.next() {
        current.push(component);
        let is_last = components.peek().is_none();
        match std::fs::symlink_metadata(&current) {
            Ok(metadata) => {
                if metadata.file_type().is_symlink() {
                    let resolved = current.canonicalize().map_err(|e| io_error(path, &e))?;
                    if !resolved.starts_with(&root) {
                        return Err(outside(
                            path,
                            "a symbolic link leads outside the working directory",
                        ));
                    }
                    current = resolved;
                }
                if !is_last && !current.is_dir() {
                    return Err(io_error(
                        path,
                        &io::Error::other(format!(
                            "{} is not a directory",
                            component.as_os_str().to_string_lossy()
                        )),
                    ));
                }
            }
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                if !is_last {
                    if !create_parents {
                        return Err(io_error(path, &error));
                    }
                    match std::fs::create_dir(&current) {
                        Ok(()) => {}
                        // Made meanwhile by a call running at the same time (background
                        // subagents): fine if it is a plain directory.
                        Err(error)
                            if error.kind() == io::ErrorKind::AlreadyExists
                                && std::fs::symlink_metadata(&current)
                                    .is_ok_and(|m| m.file_type().is_dir()) => {}
                        Err(error) => return Err(io_error(path, &error)),
                    }
                }
            }
            Err(error) => return Err(io_error(path, &error)),
        }
    }
    Ok(current)
}

#[cfg(test)]
#[path = "effects_tests.rs"]
mod tests;

/// `value` as JSON text with every object's keys in order, whether or not `serde_json` keeps
/// insertion order in this build (a dependency may turn that on for the whole workspace), so
/// the tool input a client shows is the same in every build.
pub(crate) fn canonical(value: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(object) => {
                let mut keys: Vec<&String> = object.keys().collect();
                keys.sort();
                Value::Object(
                    keys.into_iter()
                        .map(|key| (key.clone(), sorted(&object[key])))
                        .collect(),
                )
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(value).to_string()
}
