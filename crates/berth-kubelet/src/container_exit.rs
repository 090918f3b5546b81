//! How a simulated container ends, read from its command where the command says so (issue 37
//! item 7): `sleep N`, `true`, `false`, `echo ...`, `:` and, in a shell script (`sh -c`,
//! `/bin/sh -ec`, `bash -c`), `exit N` and sequences of those joined by `;`, newlines, `&&` and
//! `||`. The e2e test images' well-known subcommands (agnhost's `pause`, `netexec`, ...) serve
//! until stopped. Anything else (a loop, a conditional, a variable, an unknown program) cannot be
//! derived and runs until the pod is deleted, as before. Pure: the driver (`pods.rs`) sleeps and
//! writes the exit.
//!
//! The command runs as a container runtime runs it: `command` then `args`; with no `command`,
//! `args` follow the image's entrypoint, which berth knows only for images without one
//! ([`SHELL_IMAGES`]: the args are the command) and for agnhost (a subcommand that serves).

use std::time::Duration;

/// Images with no entrypoint: their `args` (with no `command`) are the command itself.
pub const SHELL_IMAGES: &[&str] = &["busybox", "alpine", "bash", "ubuntu", "debian"];

/// The longest script berth reads: longer ones run until deleted (a bound on the work per pod).
pub const MAX_SCRIPT_BYTES: usize = 4096;

/// How a container ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ends {
    /// It runs until stopped (nothing derivable, or a program that serves).
    Never,
    /// It exits with `exit_code` after running `after`.
    After { after: Duration, exit_code: i32 },
}

/// How a container with this `command`, `args` and `image` ends.
pub fn derive(command: &[String], args: &[String], image: &str) -> Ends {
    let argv: Vec<&str> = if command.is_empty() {
        if !SHELL_IMAGES.contains(&image_name(image)) {
            return Ends::Never;
        }
        args.iter().map(String::as_str).collect()
    } else {
        command.iter().chain(args).map(String::as_str).collect()
    };
    run_argv(&argv).map_or(Ends::Never, |(after, exit_code)| Ends::After {
        after,
        exit_code,
    })
}

/// The repository's last path part, without tag or digest: `busybox` for
/// `registry.k8s.io/e2e-test-images/busybox:1.36.1-1`.
fn image_name(image: &str) -> &str {
    let last = image.rsplit('/').next().unwrap_or(image);
    let last = last.split('@').next().unwrap_or(last);
    last.split(':').next().unwrap_or(last)
}

fn program(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// (run time, exit code) of a command line, `None` when it cannot be told.
fn run_argv(argv: &[&str]) -> Option<(Duration, i32)> {
    let (&first, rest) = argv.split_first()?;
    match program(first) {
        "sh" | "bash" | "ash" | "dash" => {
            let mut errexit = false;
            let mut i = 0;
            while let Some(flag) = rest.get(i).filter(|f| f.starts_with('-') && f.len() > 1) {
                errexit |= flag.contains('e');
                if flag.ends_with('c') {
                    let script = rest.get(i + 1)?;
                    return run_script(script, errexit);
                }
                i += 1;
            }
            // A shell without a script reads stdin, which is closed: it exits at once.
            rest.is_empty().then_some((Duration::ZERO, 0))
        }
        _ => simple(argv),
    }
}

/// One simple command: (run time, exit code), or `None` when it cannot be told.
fn simple(words: &[&str]) -> Option<(Duration, i32)> {
    let (&first, rest) = words.split_first()?;
    if words.iter().any(|w| w.contains('$') || w.contains('`')) {
        return None;
    }
    match program(first) {
        "exec" => simple(rest),
        "true" | ":" | "echo" => Some((Duration::ZERO, 0)),
        "false" => Some((Duration::ZERO, 1)),
        "sleep" => {
            let mut total = Duration::ZERO;
            for w in rest {
                total += sleep_duration(w)?;
            }
            (!rest.is_empty()).then_some((total, 0))
        }
        _ => None,
    }
}

/// `sleep`'s operand: seconds, fractional, with busybox's `s`/`m`/`h`/`d` suffixes;
/// `infinity` (and anything else) is not a finite run.
fn sleep_duration(word: &str) -> Option<Duration> {
    let (number, unit) = match word.char_indices().last()? {
        (i, 's') => (&word[..i], 1.0),
        (i, 'm') => (&word[..i], 60.0),
        (i, 'h') => (&word[..i], 3600.0),
        (i, 'd') => (&word[..i], 86400.0),
        _ => (word, 1.0),
    };
    if !number.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return None;
    }
    let seconds = number.parse::<f64>().ok()? * unit;
    Duration::try_from_secs_f64(seconds).ok()
}

/// How one command of a script is joined to the one before it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Join {
    Then,
    And,
    Or,
}

/// A shell script of simple commands joined by `;`, newlines, `&&` and `||`, with `exit N`.
fn run_script(script: &str, errexit: bool) -> Option<(Duration, i32)> {
    if script.len() > MAX_SCRIPT_BYTES {
        return None;
    }
    let mut total = Duration::ZERO;
    let mut status = 0;
    for (join, command) in split_script(script)? {
        let runs = match join {
            Join::Then => true,
            Join::And => status == 0,
            Join::Or => status != 0,
        };
        if !runs {
            continue;
        }
        let words: Vec<&str> = command.iter().map(String::as_str).collect();
        if let ["exit", rest @ ..] = words.as_slice() {
            let code = match rest {
                [] => status,
                [n] => n.parse::<i32>().ok()? & 0xff,
                _ => return None,
            };
            return Some((total, code));
        }
        let (took, code) = simple(&words)?;
        total += took;
        status = code;
        if errexit && status != 0 && join == Join::Then {
            return Some((total, status));
        }
    }
    Some((total, status))
}

/// The script's commands (as words) and how each joins the one before; `None` for quoting or
/// syntax berth does not read (pipes, redirections into commands, subshells, unclosed quotes).
fn split_script(script: &str) -> Option<Vec<(Join, Vec<String>)>> {
    let mut out = Vec::new();
    let mut join = Join::Then;
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = script.chars().peekable();
    let end_word = |word: &mut String, words: &mut Vec<String>, in_word: &mut bool| {
        if *in_word {
            words.push(std::mem::take(word));
            *in_word = false;
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                in_word = true;
                loop {
                    let q = chars.next()?;
                    if q == c {
                        break;
                    }
                    word.push(q);
                }
            }
            ' ' | '\t' => end_word(&mut word, &mut words, &mut in_word),
            ';' | '\n' | '&' | '|' => {
                end_word(&mut word, &mut words, &mut in_word);
                let next = match c {
                    '&' if chars.next_if_eq(&'&').is_some() => Join::And,
                    '|' if chars.next_if_eq(&'|').is_some() => Join::Or,
                    '&' | '|' => return None,
                    _ => Join::Then,
                };
                if !words.is_empty() {
                    out.push((join, std::mem::take(&mut words)));
                    join = next;
                } else if next != Join::Then {
                    return None;
                }
            }
            '(' | ')' | '<' | '>' | '\\' | '{' | '}' => return None,
            _ => {
                in_word = true;
                word.push(c);
            }
        }
    }
    end_word(&mut word, &mut words, &mut in_word);
    if !words.is_empty() {
        out.push((join, words));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn after(seconds: f64, exit_code: i32) -> Ends {
        Ends::After {
            after: Duration::from_secs_f64(seconds),
            exit_code,
        }
    }

    #[test]
    fn commands_say_how_long_a_container_runs_and_how_it_exits() {
        let busybox = "registry.k8s.io/e2e-test-images/busybox:1.36.1-1";
        // (case, command, args, image, how it ends)
        type Case<'a> = (&'a str, &'a [&'a str], &'a [&'a str], &'a str, Ends);
        let cases: &[Case] = &[
            (
                "sleep N runs N seconds and exits 0",
                &["sleep", "1"],
                &[],
                busybox,
                after(1.0, 0),
            ),
            (
                "a path to sleep is sleep",
                &["/bin/sleep", "30"],
                &[],
                busybox,
                after(30.0, 0),
            ),
            (
                "sleep takes busybox's suffixes and fractions",
                &["sleep", "1m", "0.5"],
                &[],
                busybox,
                after(60.5, 0),
            ),
            (
                "sleep infinity runs forever",
                &["sleep", "infinity"],
                &[],
                busybox,
                Ends::Never,
            ),
            (
                "true exits 0 at once",
                &["/bin/true"],
                &[],
                busybox,
                after(0.0, 0),
            ),
            (
                "false exits 1 at once",
                &["false"],
                &[],
                busybox,
                after(0.0, 1),
            ),
            (
                "the Job e2e fixture's fail",
                &["/bin/sh", "-c", "exit 1"],
                &[],
                busybox,
                after(0.0, 1),
            ),
            (
                "the Job e2e fixture's succeed",
                &["/bin/sh", "-c", "exit 0"],
                &[],
                busybox,
                after(0.0, 0),
            ),
            (
                "sh -c with the script in args",
                &["sh", "-c"],
                &["sleep 2; exit 3"],
                busybox,
                after(2.0, 3),
            ),
            (
                "a sequence runs each in turn",
                &["sh", "-c", "echo start; sleep 1; sleep 2"],
                &[],
                busybox,
                after(3.0, 0),
            ),
            (
                "&& stops at a failure",
                &["sh", "-c", "false && sleep 5"],
                &[],
                busybox,
                after(0.0, 1),
            ),
            (
                "|| runs only after a failure",
                &["sh", "-c", "true || exit 4"],
                &[],
                busybox,
                after(0.0, 0),
            ),
            (
                "sh -e stops at the first failure",
                &["/bin/sh", "-ec", "false; sleep 9"],
                &[],
                busybox,
                after(0.0, 1),
            ),
            (
                "without -e the script goes on",
                &["/bin/sh", "-c", "false; sleep 9"],
                &[],
                busybox,
                after(9.0, 0),
            ),
            (
                "exit without a number keeps the last status",
                &["sh", "-c", "false; exit"],
                &[],
                busybox,
                after(0.0, 1),
            ),
            (
                "quoted words are words",
                &["sh", "-c", "echo 'a; b' && exit 2"],
                &[],
                busybox,
                after(0.0, 2),
            ),
            (
                "a loop runs forever",
                &["sh", "-c", "while true; do sleep 1; done"],
                &[],
                busybox,
                Ends::Never,
            ),
            (
                "a variable cannot be told",
                &["/bin/sh", "-c", "exit $(( $RANDOM / 16384 ))"],
                &[],
                busybox,
                Ends::Never,
            ),
            (
                "an unknown program runs forever",
                &["/bin/descheduler"],
                &[],
                busybox,
                Ends::Never,
            ),
            (
                "busybox args are the command",
                &[],
                &["sleep", "5"],
                busybox,
                after(5.0, 0),
            ),
            (
                "agnhost pause serves until stopped",
                &[],
                &["pause"],
                "registry.k8s.io/e2e-test-images/agnhost:2.53",
                Ends::Never,
            ),
            (
                "nginx without a command serves",
                &[],
                &[],
                "nginx:1.27",
                Ends::Never,
            ),
            (
                "an image's args without its entrypoint cannot be told",
                &[],
                &["sleep", "5"],
                "nginx:1.27",
                Ends::Never,
            ),
            (
                "a pipe cannot be told",
                &["sh", "-c", "echo a | grep a"],
                &[],
                busybox,
                Ends::Never,
            ),
            (
                "an unclosed quote cannot be told",
                &["sh", "-c", "echo 'a"],
                &[],
                busybox,
                Ends::Never,
            ),
        ];
        for (name, command, args, image, want) in cases {
            assert_eq!(
                derive(&strings(command), &strings(args), image),
                *want,
                "{name}"
            );
        }
    }

    #[test]
    fn a_script_longer_than_the_bound_runs_forever() {
        let long = "true; ".repeat(MAX_SCRIPT_BYTES);
        assert_eq!(
            derive(&strings(&["sh", "-c", &long]), &[], "busybox"),
            Ends::Never
        );
    }

    #[test]
    fn exit_codes_wrap_as_a_shell_wraps_them() {
        assert_eq!(
            derive(&strings(&["sh", "-c", "exit 257"]), &[], "busybox"),
            after(0.0, 1)
        );
    }
}
