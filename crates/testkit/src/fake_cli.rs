//! [`FakeCli`]: a stand-in agent CLI for provider driver tests — a POSIX shell script that plays
//! a plan of [`Step`]s (print these lines, read a request and answer it, write to stderr, hang,
//! exit) and records what the driver wrote to it, its arguments and its process id.
//!
//! Real CLIs are tested end to end elsewhere; this one makes the failure modes a real CLI rarely
//! shows (exiting before answering, hanging on start, garbage on stdout, ignoring an interrupt)
//! reproducible in milliseconds.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

/// The script. Every stdin line read is appended to `$FAKE_LOG`, the process id goes to
/// `$FAKE_PIDFILE`, the arguments (one line per start) to `$FAKE_ARGS`; the Nth start plays
/// `$FAKE_PLAN.N` when that file exists, else `$FAKE_PLAN`.
const SCRIPT: &str = r#"#!/bin/sh
exec 3<&0
log=${FAKE_LOG:-/dev/null}
[ -n "$FAKE_PIDFILE" ] && echo $$ > "$FAKE_PIDFILE"
plan=$FAKE_PLAN
if [ -n "$FAKE_ARGS" ]; then
  printf '%s\n' "$*" >> "$FAKE_ARGS"
  starts=$(wc -l < "$FAKE_ARGS" | tr -d ' ')
  [ -f "$FAKE_PLAN.$starts" ] && plan="$FAKE_PLAN.$starts"
fi
# Reads one `Content-Length` frame from the driver into $body (and the log).
read_frame() {
  len=0
  while IFS= read -r header <&3; do
    header=$(printf '%s' "$header" | tr -d '\r')
    [ -z "$header" ] && break
    case "$header" in
      [Cc]ontent-[Ll]ength:*) len=$(printf '%s' "${header#*:}" | tr -d ' ') ;;
    esac
  done
  [ "$len" -gt 0 ] 2>/dev/null || exit 0
  body=$(dd bs=1 count="$len" <&3 2>/dev/null)
  printf '%s\n' "$body" >> "$log"
}
# Writes $1 as one `Content-Length` frame.
write_frame() {
  n=$(printf '%s' "$1" | wc -c | tr -d ' ')
  printf 'Content-Length: %s\r\n\r\n%s' "$n" "$1"
}
while IFS= read -r step; do
  verb=${step%% *}
  arg=${step#* }
  case "$verb" in
    OUT) printf '%s\n' "$arg" ;;
    ERR) printf '%s\n' "$arg" >&2 ;;
    IN) IFS= read -r line <&3 || exit 0; printf '%s\n' "$line" >> "$log" ;;
    ACK)
      IFS= read -r line <&3 || exit 0
      printf '%s\n' "$line" >> "$log"
      id=$(printf '%s' "$line" | sed -n 's/.*"request_id": *"\([^"]*\)".*/\1/p')
      printf '{"type":"control_response","response":{"subtype":"success","request_id":"%s","response":{}}}\n' "$id"
      ;;
    REPLY)
      IFS= read -r line <&3 || exit 0
      printf '%s\n' "$line" >> "$log"
      id=$(printf '%s' "$line" | sed -n 's/^{\("jsonrpc":"2.0",\)\{0,1\}"id":\([0-9]*\),.*/\2/p')
      printf '{"id":%s,"result":%s}\n' "$id" "$arg"
      ;;
    FOUT) write_frame "$arg" ;;
    FIN) read_frame ;;
    FREPLY)
      read_frame
      id=$(printf '%s' "$body" | sed -n 's/^{\("jsonrpc":"2.0",\)\{0,1\}"id":\([0-9]*\),.*/\2/p')
      write_frame "{\"jsonrpc\":\"2.0\",\"id\":$id,\"result\":$arg}"
      ;;
    SLEEP) sleep "$arg" ;;
    EXIT) exit "$arg" ;;
  esac
done < "$plan"
"#;

/// One step of a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Print this line on stdout.
    Out(String),
    /// Print this line on stderr.
    Err(String),
    /// Read one stdin line.
    In,
    /// Read a Claude `control_request` and answer it with an empty success `control_response`.
    Ack,
    /// Read a JSON-RPC request whose line starts with `{"id":N,` (or `{"jsonrpc":"2.0","id":N,`)
    /// and answer `{"id":N,"result":<this JSON>}`.
    Reply(String),
    /// Print this JSON as one `Content-Length` frame (LSP-style framing, as Copilot speaks).
    FrameOut(String),
    /// Read one `Content-Length` frame.
    FrameIn,
    /// Read a framed JSON-RPC request whose body starts with `{"id":N,` (or
    /// `{"jsonrpc":"2.0","id":N,`) and answer with the frame
    /// `{"jsonrpc":"2.0","id":N,"result":<this JSON>}`.
    FrameReply(String),
    /// Run `sleep` for this many seconds (as a child, in the CLI's process group).
    Sleep(u32),
    /// Exit with this code.
    Exit(i32),
}

impl Step {
    /// [`Step::Out`] of `line`.
    pub fn out(line: impl Into<String>) -> Self {
        Self::Out(line.into())
    }

    fn line(&self) -> String {
        match self {
            Self::Out(line) => format!("OUT {line}"),
            Self::Err(line) => format!("ERR {line}"),
            Self::In => "IN".to_owned(),
            Self::Ack => "ACK".to_owned(),
            Self::Reply(result) => format!("REPLY {result}"),
            Self::FrameOut(body) => format!("FOUT {body}"),
            Self::FrameIn => "FIN".to_owned(),
            Self::FrameReply(result) => format!("FREPLY {result}"),
            Self::Sleep(seconds) => format!("SLEEP {seconds}"),
            Self::Exit(code) => format!("EXIT {code}"),
        }
    }
}

/// A stand-in CLI in a temporary directory of its own.
#[derive(Debug)]
pub struct FakeCli {
    dir: tempfile::TempDir,
}

impl FakeCli {
    /// Writes the script (mode 755) into a new temporary directory.
    pub fn new() -> io::Result<Self> {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir()?;
        let binary = dir.path().join("fake-cli");
        std::fs::write(&binary, SCRIPT)?;
        std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o755))?;
        Ok(Self { dir })
    }

    /// A file in the CLI's directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The executable to launch.
    pub fn binary(&self) -> PathBuf {
        self.path("fake-cli")
    }

    /// The variables the launch must set.
    pub fn env(&self) -> Vec<(String, OsString)> {
        [
            ("FAKE_PLAN", "plan"),
            ("FAKE_LOG", "stdin.log"),
            ("FAKE_PIDFILE", "pid"),
            ("FAKE_ARGS", "args.log"),
        ]
        .into_iter()
        .map(|(name, file)| (name.to_owned(), self.path(file).into_os_string()))
        .collect()
    }

    /// Writes the plan of the `start`th process (1-based; 0: every start without a plan of its
    /// own).
    pub fn plan(&self, start: usize, steps: &[Step]) -> io::Result<()> {
        let name = if start == 0 {
            "plan".to_owned()
        } else {
            format!("plan.{start}")
        };
        let text: String = steps.iter().map(|step| step.line() + "\n").collect();
        std::fs::write(self.path(&name), text)
    }

    /// What the driver wrote, one JSON value per line (a line that is not JSON becomes a
    /// string value).
    pub fn written(&self) -> Vec<serde_json::Value> {
        read_lines(&self.path("stdin.log"))
            .into_iter()
            .map(|line| serde_json::from_str(&line).unwrap_or(serde_json::Value::String(line)))
            .collect()
    }

    /// The command line of every start, in order.
    pub fn starts(&self) -> Vec<String> {
        read_lines(&self.path("args.log"))
    }

    /// The process id of the latest start.
    pub fn pid(&self) -> Option<i32> {
        std::fs::read_to_string(self.path("pid"))
            .ok()
            .and_then(|text| text.trim().parse().ok())
    }
}

fn read_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}
