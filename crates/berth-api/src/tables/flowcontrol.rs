//! Rows of `flowcontrol.apiserver.k8s.io`: FlowSchemas and PriorityLevelConfigurations, as
//! upstream's `printFlowSchema` and `printPriorityLevelConfiguration`.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::{age, col, str_at, Column, AGE, NAME};

pub(super) const FLOW_SCHEMA_COLUMNS: &[Column] = &[
    NAME,
    col("PriorityLevel", "string", "`name` is the name of the priority level configuration being referenced Required."),
    col("MatchingPrecedence", "string", "`matchingPrecedence` is used to choose among the FlowSchemas that match a given request. The chosen FlowSchema is among those with the numerically lowest (which we take to be logically highest) MatchingPrecedence.  Each MatchingPrecedence value must be ranged in [1,10000]. Note that if the precedence is not specified, it will be set to 1000 as default."),
    col("DistinguisherMethod", "string", "`distinguisherMethod` defines how to compute the flow distinguisher for requests that match this schema. `nil` specifies that the distinguisher is disabled and thus will always be the empty string."),
    AGE,
    col("MissingPL", "string", "references a broken or non-existent PriorityLevelConfiguration"),
];

pub(super) fn flow_schema_cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let distinguisher = match str_at(obj, "/spec/distinguisherMethod/type") {
        "" => "<none>",
        t => t,
    };
    let missing = obj
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Dangling"))
        .and_then(|c| c["status"].as_str())
        .unwrap_or("?");
    vec![
        json!(str_at(obj, "/metadata/name")),
        json!(str_at(obj, "/spec/priorityLevelConfiguration/name")),
        json!(obj
            .pointer("/spec/matchingPrecedence")
            .and_then(Value::as_i64)
            .unwrap_or(0)),
        json!(distinguisher),
        json!(age(obj, now)),
        json!(missing),
    ]
}

pub(super) const PRIORITY_LEVEL_COLUMNS: &[Column] = &[
    NAME,
    col("Type", "string", "`type` indicates whether this priority level is subject to limitation on request execution.  A value of `\"Exempt\"` means that requests of this priority level are not subject to a limit (and thus are never queued) and do not detract from the capacity made available to other priority levels.  A value of `\"Limited\"` means that (a) requests of this priority level _are_ subject to limits and (b) some of the server's limited capacity is made available exclusively to this priority level. Required."),
    col("NominalConcurrencyShares", "string", "`nominalConcurrencyShares` (NCS) contributes to the computation of the NominalConcurrencyLimit (NominalCL) of this level. This is the number of execution seats available at this priority level."),
    col("Queues", "string", "`queues` is the number of queues for this priority level. The queues exist independently at each apiserver. The value must be positive.  Setting it to 1 effectively precludes shufflesharding and thus makes the distinguisher method of associated flow schemas irrelevant.  This field has a default value of 64."),
    col("HandSize", "string", "`handSize` is a small positive number that configures the shuffle sharding of requests into queues.  When enqueuing a request at this priority level the request's flow identifier (a string pair) is hashed and the hash value is used to shuffle the list of queues and deal a hand of the size specified here.  The request is put into one of the shortest queues in that hand. `handSize` must be no larger than `queues`, and should be significantly smaller (so that a few heavy flows do not saturate most of the queues).  This field has a default value of 8."),
    col("QueueLengthLimit", "string", "`queueLengthLimit` is the maximum number of requests allowed to be waiting in a given queue of this priority level at a time; excess requests are rejected.  This value must be positive.  If not specified, it will be defaulted to 50."),
    AGE,
];

pub(super) fn priority_level_cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let none = || json!("<none>");
    let (mut shares, mut queues, mut hand, mut length) = (none(), none(), none(), none());
    if let Some(limited) = obj.pointer("/spec/limited").filter(|l| l.is_object()) {
        shares = limited
            .get("nominalConcurrencyShares")
            .cloned()
            .unwrap_or(json!(0));
        if let Some(q) = limited
            .pointer("/limitResponse/queuing")
            .filter(|q| q.is_object())
        {
            let n = |k: &str| q.get(k).cloned().unwrap_or(json!(0));
            (queues, hand, length) = (n("queues"), n("handSize"), n("queueLengthLimit"));
        }
    }
    vec![
        json!(str_at(obj, "/metadata/name")),
        json!(str_at(obj, "/spec/type")),
        shares,
        queues,
        hand,
        length,
        json!(age(obj, now)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::tests::{ago, now};

    #[test]
    fn a_flow_schema_row_names_its_level_precedence_and_distinguisher() {
        let fs = json!({"metadata": {"name": "global-default", "creationTimestamp": ago(60)},
            "spec": {"priorityLevelConfiguration": {"name": "global-default"},
                "matchingPrecedence": 9900, "distinguisherMethod": {"type": "ByUser"}},
            "status": {"conditions": [{"type": "Dangling", "status": "False"}]}});
        assert_eq!(
            flow_schema_cells(&fs, now()),
            vec![
                json!("global-default"),
                json!("global-default"),
                json!(9900),
                json!("ByUser"),
                json!("60s"),
                json!("False")
            ]
        );
        let bare = json!({"metadata": {"name": "x"}, "spec": {}});
        let cells = flow_schema_cells(&bare, now());
        assert_eq!((&cells[3], &cells[5]), (&json!("<none>"), &json!("?")));
    }

    #[test]
    fn a_priority_level_row_shows_none_where_it_does_not_queue() {
        let exempt =
            json!({"metadata": {"name": "exempt"}, "spec": {"type": "Exempt", "exempt": {}}});
        assert_eq!(
            priority_level_cells(&exempt, now())[1..6],
            [
                json!("Exempt"),
                json!("<none>"),
                json!("<none>"),
                json!("<none>"),
                json!("<none>")
            ]
        );
        let limited = json!({"metadata": {"name": "w"}, "spec": {"type": "Limited", "limited": {
            "nominalConcurrencyShares": 40, "limitResponse": {"type": "Queue",
                "queuing": {"queues": 128, "handSize": 6, "queueLengthLimit": 50}}}}});
        assert_eq!(
            priority_level_cells(&limited, now())[1..6],
            [json!("Limited"), json!(40), json!(128), json!(6), json!(50)]
        );
    }
}
