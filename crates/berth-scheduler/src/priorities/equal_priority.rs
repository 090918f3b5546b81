//! EqualPriority: every node scores 1 (implemented inline in `Prio::score`).

#[cfg(test)]
mod tests {
    use crate::testutil::*;
    use serde_json::json;

    #[test]
    fn all_one() {
        let got = scores_of(
            builtin_prio(R::EqualPriority),
            vec![cm("a", "1", "1Gi"), cm("b", "1", "1Gi")],
            vec![],
            pod(json!({})),
        );
        assert_eq!(got, vec![1, 1]);
    }
}
