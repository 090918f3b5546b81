//! Lexer and recursive-descent parser for the label selector string form, following upstream's
//! grammar and error messages.

use super::{Operator, Requirement, SelectorError};
use crate::validation::names;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    End,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier(String),
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

impl Token {
    fn literal(&self) -> &str {
        match self {
            Token::End => "",
            Token::ClosedPar => ")",
            Token::Comma => ",",
            Token::DoesNotExist => "!",
            Token::DoubleEquals => "==",
            Token::Equals => "=",
            Token::GreaterThan => ">",
            Token::Identifier(s) => s,
            Token::In => "in",
            Token::LessThan => "<",
            Token::NotEquals => "!=",
            Token::NotIn => "notin",
            Token::OpenPar => "(",
        }
    }

    /// In value context `in` and `notin` are plain identifiers.
    fn as_value(&self) -> Token {
        match self {
            Token::In => Token::Identifier("in".into()),
            Token::NotIn => Token::Identifier("notin".into()),
            t => t.clone(),
        }
    }
}

fn symbol(s: &str) -> Option<Token> {
    Some(match s {
        ")" => Token::ClosedPar,
        "," => Token::Comma,
        "!" => Token::DoesNotExist,
        "==" => Token::DoubleEquals,
        "=" => Token::Equals,
        ">" => Token::GreaterThan,
        "in" => Token::In,
        "<" => Token::LessThan,
        "!=" => Token::NotEquals,
        "notin" => Token::NotIn,
        "(" => Token::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

fn is_special(c: char) -> bool {
    matches!(c, '=' | '!' | '(' | ')' | ',' | '>' | '<')
}

fn lex(s: &str) -> Vec<Token> {
    let chars: Vec<char> = s.chars().collect();
    let mut pos = 0;
    let mut out = Vec::new();
    loop {
        while pos < chars.len() && is_whitespace(chars[pos]) {
            pos += 1;
        }
        if pos >= chars.len() {
            out.push(Token::End);
            return out;
        }
        if is_special(chars[pos]) {
            // Longest run of special characters that is still a token.
            let mut buf = String::new();
            let mut last: Option<(Token, usize)> = None;
            let mut i = pos;
            while i < chars.len() && is_special(chars[i]) {
                buf.push(chars[i]);
                match symbol(&buf) {
                    Some(t) => last = Some((t, i + 1)),
                    None if last.is_some() => break,
                    None => {}
                }
                i += 1;
            }
            match last {
                Some((t, end)) => {
                    out.push(t);
                    pos = end;
                }
                // Every single special character is a token, so this is unreachable; treat
                // the run as an identifier rather than panic.
                None => {
                    out.push(Token::Identifier(buf));
                    pos = i;
                }
            }
        } else {
            let start = pos;
            while pos < chars.len() && !is_special(chars[pos]) && !is_whitespace(chars[pos]) {
                pos += 1;
            }
            let word: String = chars[start..pos].iter().collect();
            out.push(symbol(&word).unwrap_or(Token::Identifier(word)));
        }
    }
}

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
}

impl Parser {
    fn peek(&self, values: bool) -> Token {
        let t = self.tokens.get(self.pos).cloned().unwrap_or(Token::End);
        if values {
            t.as_value()
        } else {
            t
        }
    }

    fn next(&mut self, values: bool) -> Token {
        let t = self.peek(values);
        self.pos += 1;
        t
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, SelectorError> {
        let mut reqs = Vec::new();
        loop {
            match self.peek(true) {
                Token::Identifier(_) | Token::DoesNotExist => {
                    let r = self.requirement().map_err(|e| {
                        SelectorError::new(format!("unable to parse requirement: {}", e.message))
                    })?;
                    reqs.push(r);
                    match self.next(true) {
                        Token::End => return Ok(reqs),
                        Token::Comma => {
                            let t = self.peek(true);
                            if !matches!(t, Token::Identifier(_) | Token::DoesNotExist) {
                                return Err(SelectorError::new(format!(
                                    "found '{}', expected: identifier after ','",
                                    t.literal()
                                )));
                            }
                        }
                        t => {
                            return Err(SelectorError::new(format!(
                                "found '{}', expected: ',' or 'end of string'",
                                t.literal()
                            )))
                        }
                    }
                }
                Token::End => return Ok(reqs),
                t => {
                    return Err(SelectorError::new(format!(
                        "found '{}', expected: !, identifier, or 'end of string'",
                        t.literal()
                    )))
                }
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, SelectorError> {
        let mut operator = None;
        let mut tok = self.next(true);
        if tok == Token::DoesNotExist {
            operator = Some(Operator::DoesNotExist);
            tok = self.next(true);
        }
        let Token::Identifier(key) = tok else {
            return Err(SelectorError::new(format!(
                "found '{}', expected: identifier",
                tok.literal()
            )));
        };
        let key_errs = names::qualified_name(&key);
        if !key_errs.is_empty() {
            return Err(SelectorError::new(format!(
                "<nil>: Invalid value: {}: {}",
                names::go_quote(&key),
                key_errs.join("; ")
            )));
        }
        if operator.is_some() || matches!(self.peek(true), Token::End | Token::Comma) {
            // `!key` is complete by itself; whatever follows is the caller's problem.
            let op = operator.unwrap_or(Operator::Exists);
            return Requirement::new(&key, op, Vec::new());
        }
        let op = match self.next(false) {
            Token::In => Operator::In,
            Token::Equals => Operator::Equals,
            Token::DoubleEquals => Operator::DoubleEquals,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            Token::NotIn => Operator::NotIn,
            Token::NotEquals => Operator::NotEquals,
            t => {
                return Err(SelectorError::new(format!(
                    "found '{}', expected: in, notin, =, ==, !=, gt, lt",
                    t.literal()
                )))
            }
        };
        let values = match op {
            Operator::In | Operator::NotIn => self.set_values()?,
            _ => self.exact_value()?,
        };
        Requirement::new(&key, op, values)
    }

    fn set_values(&mut self) -> Result<Vec<String>, SelectorError> {
        let t = self.next(true);
        if t != Token::OpenPar {
            return Err(SelectorError::new(format!(
                "found '{}' expected: '('",
                t.literal()
            )));
        }
        let t = self.peek(true);
        match t {
            Token::Identifier(_) | Token::Comma => {
                let set = self.identifiers()?;
                if self.next(true) != Token::ClosedPar {
                    return Err(SelectorError::new(format!(
                        "found '{}', expected: ')'",
                        t.literal()
                    )));
                }
                Ok(set)
            }
            Token::ClosedPar => {
                self.next(true);
                Ok(vec![String::new()])
            }
            t => Err(SelectorError::new(format!(
                "found '{}', expected: ',', ')' or identifier",
                t.literal()
            ))),
        }
    }

    /// A comma-separated, possibly empty list of possibly empty identifiers, as a sorted set.
    fn identifiers(&mut self) -> Result<Vec<String>, SelectorError> {
        let mut set = std::collections::BTreeSet::new();
        loop {
            match self.next(true) {
                Token::Identifier(v) => {
                    set.insert(v);
                    match self.peek(true) {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(set.into_iter().collect()),
                        t => {
                            return Err(SelectorError::new(format!(
                                "found '{}', expected: ',' or ')'",
                                t.literal()
                            )))
                        }
                    }
                }
                Token::Comma => {
                    if set.is_empty() {
                        set.insert(String::new());
                    }
                    match self.peek(true) {
                        Token::ClosedPar => {
                            set.insert(String::new());
                            return Ok(set.into_iter().collect());
                        }
                        Token::Comma => {
                            set.insert(String::new());
                        }
                        _ => {}
                    }
                }
                t => {
                    return Err(SelectorError::new(format!(
                        "found '{}', expected: ',', or identifier",
                        t.literal()
                    )))
                }
            }
        }
    }

    fn exact_value(&mut self) -> Result<Vec<String>, SelectorError> {
        if matches!(self.peek(true), Token::End | Token::Comma) {
            return Ok(vec![String::new()]);
        }
        match self.next(true) {
            Token::Identifier(v) => Ok(vec![v]),
            t => Err(SelectorError::new(format!(
                "found '{}', expected: identifier",
                t.literal()
            ))),
        }
    }
}

/// Parses the selector string into unsorted requirements.
pub(super) fn parse(s: &str) -> Result<Vec<Requirement>, SelectorError> {
    Parser {
        tokens: lex(s),
        pos: 0,
    }
    .parse()
}
