use std::ffi::OsString;

use super::*;

const FILE: &str = r#"
[[agent]]
name = "copilot"
command = "copilot"
args = ["--acp", "--no-auto-update"]
env_remove = ["GITHUB_TOKEN"]
start_timeout_secs = 60
cancel_grace_secs = 0.5

[agent.env]
COPILOT_OFFLINE = "true"
COPILOT_PROVIDER_API_KEY = { from_env = "MY_KEY" }

[[agent]]
name = "gemini2"
command = "/opt/gemini"
working_directory = "/srv/scratch"
"#;

fn lookup(name: &str) -> Option<OsString> {
    (name == "MY_KEY").then(|| OsString::from("secret"))
}

#[test]
fn an_agents_file_gives_each_agent_its_command_arguments_and_environment() {
    let agents = AgentsFile::parse(FILE).unwrap().resolve(lookup).unwrap();
    let [copilot, gemini] = agents.as_slice() else {
        panic!("{agents:?}");
    };
    assert_eq!(copilot.provider_id(), "acp.copilot");
    assert_eq!(copilot.cli.binary, PathBuf::from("copilot"));
    assert_eq!(copilot.cli.extra_args, ["--acp", "--no-auto-update"]);
    assert_eq!(copilot.cli.env_remove, ["GITHUB_TOKEN"]);
    assert_eq!(copilot.cli.start_timeout, Duration::from_secs(60));
    assert_eq!(copilot.cli.cancel_grace, Duration::from_millis(500));
    let env: Vec<(&str, &OsString)> = copilot
        .cli
        .env
        .iter()
        .map(|(name, value)| (name.as_str(), value))
        .collect();
    assert_eq!(
        env,
        [
            ("COPILOT_OFFLINE", &OsString::from("true")),
            ("COPILOT_PROVIDER_API_KEY", &OsString::from("secret"))
        ]
    );
    assert_eq!(copilot.working_directory, WorkingDirectory::Session);
    assert_eq!(
        gemini.working_directory,
        WorkingDirectory::Fixed(PathBuf::from("/srv/scratch"))
    );
    // The secret never shows in a debug print.
    assert!(!format!("{copilot:?}").contains("secret"));
}

#[test]
fn bad_files_are_refused_naming_the_agent_and_the_field() {
    let refused = |text: &str| AgentsFile::parse(text).unwrap_err().to_string();
    assert!(refused("").contains("no agent"));
    let bad_name = refused("[[agent]]\nname = \"My_Agent\"\ncommand = \"x\"\n");
    assert!(
        bad_name.contains("My_Agent") && bad_name.contains("[a-z0-9]+"),
        "{bad_name}"
    );
    let twice = refused(
        "[[agent]]\nname = \"a\"\ncommand = \"x\"\n[[agent]]\nname = \"a\"\ncommand = \"y\"\n",
    );
    assert!(twice.contains("defined twice"), "{twice}");
    let unknown = refused("[[agent]]\nname = \"a\"\ncommand = \"x\"\nargz = []\n");
    assert!(unknown.contains("argz"), "{unknown}");
    let relative =
        refused("[[agent]]\nname = \"a\"\ncommand = \"x\"\nworking_directory = \"rel\"\n");
    assert!(relative.contains("absolute"), "{relative}");
    let timeout = refused("[[agent]]\nname = \"a\"\ncommand = \"x\"\nstart_timeout_secs = -1\n");
    assert!(timeout.contains("start_timeout_secs"), "{timeout}");
    let empty = refused("[[agent]]\nname = \"a\"\ncommand = \" \"\n");
    assert!(empty.contains("command is empty"), "{empty}");
    let missing = AgentsFile::parse(FILE)
        .unwrap()
        .resolve(|_| None)
        .unwrap_err()
        .to_string();
    assert!(
        missing.contains("copilot") && missing.contains("MY_KEY"),
        "{missing}"
    );
}

#[test]
fn the_short_form_is_name_equals_program() {
    let config = AcpAgentConfig::short("gemini=/usr/bin/gemini").unwrap();
    assert_eq!(config.provider_id(), "acp.gemini");
    assert_eq!(config.cli.binary, PathBuf::from("/usr/bin/gemini"));
    assert!(config.cli.extra_args.is_empty());
    assert!(AcpAgentConfig::short("gemini").is_err());
    assert!(AcpAgentConfig::short("Gem=/x").is_err());
    assert!(AcpAgentConfig::short("gem=").is_err());
}

#[test]
fn the_fingerprint_changes_with_the_launch() {
    let one = AcpAgentConfig::short("a=/x").unwrap();
    let mut two = one.clone();
    assert_eq!(one.fingerprint(), two.fingerprint());
    two.cli.extra_args.push("--acp".to_owned());
    assert_ne!(one.fingerprint(), two.fingerprint());
}
