//! `--token-auth-file`: upstream's static token file, a CSV of `token,user,uid,"group1,group2"`
//! (further columns ignored, leading spaces trimmed, blank lines skipped; a line with an empty
//! token is skipped as upstream warns and skips it).

use crate::user::UserInfo;
use std::collections::HashMap;

/// Why a token file was refused, naming the file and the line.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("token file {path:?}, line {line}: {message}")]
pub struct TokenFileError {
    pub path: String,
    pub line: usize,
    pub message: String,
}

/// Splits one CSV line into fields (RFC 4180 quoting, `""` inside quotes is a quote).
fn fields(line: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.peek() == Some(&' ') || chars.peek() == Some(&'\t') {
            chars.next();
        }
        let mut field = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    None => return Err("extraneous or missing \" in quoted-field".into()),
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        field.push('"');
                    }
                    Some('"') => break,
                    Some(c) => field.push(c),
                }
            }
            match chars.next() {
                None => {
                    out.push(field);
                    return Ok(out);
                }
                Some(',') => out.push(field),
                Some(_) => return Err("extraneous or missing \" in quoted-field".into()),
            }
        } else {
            loop {
                match chars.next() {
                    None => {
                        out.push(field);
                        return Ok(out);
                    }
                    Some(',') => break,
                    Some('"') => return Err("bare \" in non-quoted-field".into()),
                    Some(c) => field.push(c),
                }
            }
            out.push(field);
        }
    }
}

/// Parses the text of the token file at `path` into token → user.
pub fn parse(path: &str, text: &str) -> Result<HashMap<String, UserInfo>, TokenFileError> {
    let mut tokens = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let error = |message: String| TokenFileError {
            path: path.to_string(),
            line: i + 1,
            message,
        };
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        let record = fields(line).map_err(error)?;
        if record.len() < 3 {
            return Err(error(format!(
                "must have at least 3 columns (token, user name, user uid), found {}",
                record.len()
            )));
        }
        if record[0].is_empty() {
            tracing::warn!(path, line = i + 1, "empty token in the token file; skipped");
            continue;
        }
        let groups = match record.get(3) {
            Some(g) if !g.is_empty() => g.split(',').map(str::to_string).collect(),
            _ => Vec::new(),
        };
        tokens.insert(
            record[0].clone(),
            UserInfo {
                name: record[1].clone(),
                uid: record[2].clone(),
                groups,
                ..UserInfo::default()
            },
        );
    }
    Ok(tokens)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn upstream_rows_with_and_without_groups() {
        let text = "abc,alice,1001,\"dev,ops\"\n\n  def, bob ,1002\nghi,carol,1003,,extra\n";
        let tokens = parse("t.csv", text).unwrap();
        let alice = &tokens["abc"];
        assert_eq!(alice.name, "alice");
        assert_eq!(alice.uid, "1001");
        assert_eq!(alice.groups, vec!["dev", "ops"]);
        // Leading spaces are trimmed, trailing ones kept (Go's TrimLeadingSpace).
        assert_eq!(tokens["def"].name, "bob ");
        assert!(tokens["ghi"].groups.is_empty());
    }

    #[test]
    fn errors_name_the_file_and_line() {
        let err = parse("/etc/tokens.csv", "a,b,c\nonly,two\n").unwrap_err();
        assert_eq!(err.line, 2);
        assert_eq!(
            err.to_string(),
            "token file \"/etc/tokens.csv\", line 2: must have at least 3 columns (token, user name, user uid), found 2"
        );
        assert_eq!(parse("f", "a,\"b,c\n").unwrap_err().line, 1);
        assert_eq!(parse("f", "a,b\"x,c\n").unwrap_err().line, 1);
    }

    #[test]
    fn an_empty_token_is_skipped() {
        assert!(parse("f", ",alice,1\n").unwrap().is_empty());
    }

    fn field() -> impl Strategy<Value = String> {
        "[a-zA-Z0-9:@._ ,\"-]{0,12}"
    }

    fn quote(s: &str) -> String {
        format!("\"{}\"", s.replace('"', "\"\""))
    }

    proptest! {
        #[test]
        fn any_input_parses_or_errors_without_panicking(text in "(?s).{0,300}") {
            let _ = parse("f", &text);
        }

        #[test]
        fn quoted_rows_round_trip(token in "[a-z0-9]{1,16}", user in field(), uid in field(),
                                  groups in proptest::collection::vec("[a-z:]{1,8}", 0..4)) {
            let line = format!("{},{},{},{}\n", quote(&token), quote(&user), quote(&uid), quote(&groups.join(",")));
            let tokens = parse("f", &line).unwrap();
            let got = &tokens[&token];
            prop_assert_eq!(&got.name, &user);
            prop_assert_eq!(&got.uid, &uid);
            prop_assert_eq!(&got.groups, &groups);
        }
    }
}
