//! Configs: DescribeConfigs, AlterConfigs and IncrementalAlterConfigs. A topic's configs
//! are checked as Apache Kafka's `LogConfig` checks them, and those the broker has a use
//! for take effect at the next Produce (`state::Topics::partition_with_settings`).

use super::*;

/// Kafka's `ConfigResource.Type` codes.
const TOPIC: i8 = 2;
const BROKER: i8 = 4;

/// IncrementalAlterConfigs' operations.
const SET: i8 = 0;
const DELETE: i8 = 1;
const APPEND: i8 = 2;
const SUBTRACT: i8 = 3;

/// A resource's answer: its error code and message.
type Answer = Result<(), (ErrorCode, String)>;

/// Kafka's check of a topic config and its value (`LogConfig.validate`, the `ConfigDef`
/// types and validators): the message of its INVALID_CONFIG.
pub(super) fn check_topic_config(name: &str, value: &str) -> Result<(), String> {
    let Some(&(_, _, ty)) = TOPIC_CONFIGS.iter().find(|(n, _, _)| *n == name) else {
        return Err(std::format!("Unknown topic config name: {name}"));
    };
    let v = value.trim();
    // The value is not echoed: a client may have put a secret in the wrong config.
    let bad = |why: &str| Err(std::format!("Invalid value for configuration {name}: {why}"));
    let number: Option<f64> = match ty {
        1 if !v.eq_ignore_ascii_case("true") && !v.eq_ignore_ascii_case("false") => {
            return bad("Expected value to be either true or false");
        }
        3 => match v.parse::<i32>() {
            Ok(n) => Some(f64::from(n)),
            Err(_) => return bad("Not a number of type INT"),
        },
        5 => match v.parse::<i64>() {
            Ok(n) => Some(n as f64),
            Err(_) => return bad("Not a number of type LONG"),
        },
        6 => match v.parse::<f64>() {
            Ok(n) => Some(n),
            Err(_) => return bad("Not a number of type DOUBLE"),
        },
        _ => None,
    };
    let one_of: &[&str] = match name {
        "compression.type" => &["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"],
        "message.timestamp.type" => &["CreateTime", "LogAppendTime"],
        _ => &[],
    };
    if !one_of.is_empty() && !one_of.contains(&v) {
        return bad(&std::format!("String must be one of: {}", one_of.join(", ")));
    }
    if name == "cleanup.policy" && !v.split(',').all(|p| matches!(p.trim(), "delete" | "compact")) {
        return bad("Invalid value for cleanup.policy: each item must be one of [compact, delete]");
    }
    // The ranges of Kafka's validators.
    let range: Option<(f64, f64)> = match name {
        "max.message.bytes"
        | "index.interval.bytes"
        | "segment.jitter.ms"
        | "min.compaction.lag.ms"
        | "delete.retention.ms"
        | "file.delete.delay.ms"
        | "flush.messages"
        | "flush.ms"
        | "message.timestamp.before.max.ms"
        | "message.timestamp.after.max.ms" => Some((0.0, f64::MAX)),
        "max.compaction.lag.ms" | "segment.ms" | "min.insync.replicas" => Some((1.0, f64::MAX)),
        "segment.bytes" => Some((1_048_576.0, f64::MAX)),
        "segment.index.bytes" => Some((4.0, f64::MAX)),
        "retention.ms" => Some((-1.0, f64::MAX)),
        "min.cleanable.dirty.ratio" => Some((0.0, 1.0)),
        "compression.gzip.level" => Some((-1.0, 9.0)),
        "compression.lz4.level" => Some((1.0, 17.0)),
        "compression.zstd.level" => Some((-131_072.0, 22.0)),
        _ => None,
    };
    if let (Some(n), Some((min, max))) = (number, range) {
        if n < min {
            return bad(&std::format!("Value must be at least {min}"));
        }
        if n > max {
            return bad(&std::format!("Value must be no more than {max}"));
        }
    }
    Ok(())
}

/// The other resources of a request with the same type and name (Kafka answers each
/// INVALID_REQUEST).
fn duplicated(all: &[(i8, &str)], i: usize) -> bool {
    all.iter().enumerate().any(|(j, r)| j != i && *r == all[i])
}

impl Handler<'_> {
    /// The authorizer's refusal of `operation` (DESCRIBE_CONFIGS or ALTER_CONFIGS) on a
    /// config resource, as Kafka checks it: on the cluster for a broker, broker logger or
    /// client-metrics resource, on the topic or group for theirs.
    fn config_refused(&self, resource_type: i8, name: &str, operation: i8) -> Option<(ErrorCode, String)> {
        let (rt, name, code, message) = match resource_type {
            TOPIC => (resource::TOPIC, name, ErrorCode::TopicAuthorizationFailed, "Topic"),
            BROKER | 8 | 16 => {
                (resource::CLUSTER, CLUSTER_NAME, ErrorCode::ClusterAuthorizationFailed, "Cluster")
            }
            32 => (resource::GROUP, name, ErrorCode::GroupAuthorizationFailed, "Group"),
            _ => return None,
        };
        (!self.allowed(operation, rt, name)).then(|| (code, std::format!("{message} authorization failed.")))
    }

    /// Replaces a topic's configs (unless `validate_only`).
    fn set_topic_configs(
        &self,
        name: &str,
        validate_only: bool,
        change: impl FnOnce(&[(String, String)]) -> Result<Vec<(String, String)>, (ErrorCode, String)>,
    ) -> Answer {
        self.shared.topics.with(|all| {
            let Some(topic) = all.get_mut(name) else {
                return Err((
                    ErrorCode::UnknownTopicOrPartition,
                    std::format!("The topic '{name}' does not exist."),
                ));
            };
            let configs = change(&topic.configs)?;
            if !validate_only {
                topic.configs = configs;
            }
            Ok(())
        })
    }

    /// Answers a resource that is not a topic: broker configs are read-only here, other
    /// types are not configurable.
    fn not_alterable(ty: i8) -> Answer {
        Err(match ty {
            BROKER => (
                ErrorCode::InvalidRequest,
                "Cannot update these configs dynamically: this broker's configs are read-only".into(),
            ),
            other => (ErrorCode::InvalidRequest, std::format!("Unsupported resource type {other}")),
        })
    }

    pub(super) fn alter_configs(
        &mut self,
        reply: ReplyTo,
        a: crate::codec::messages::AlterConfigsRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::codec::messages::alter_configs::{AlterConfigsResourceResponse, AlterConfigsResponse};
        let resources: Vec<_> = a.resources().iter().collect();
        let keys: Vec<(i8, &str)> =
            resources.iter().map(|r| (r.resource_type(), r.resource_name())).collect();
        let mut answers = Vec::new();
        for (i, r) in resources.iter().enumerate() {
            let refused = self.config_refused(r.resource_type(), r.resource_name(), op::ALTER_CONFIGS);
            let answer: Answer = if duplicated(&keys, i) {
                Err((ErrorCode::InvalidRequest, "Each resource must appear at most once.".into()))
            } else if let Some(refused) = refused {
                Err(refused)
            } else if r.resource_type() != TOPIC {
                Self::not_alterable(r.resource_type())
            } else {
                // The whole set of the topic's configs: what is not named goes back to its
                // default.
                (|| {
                    let mut configs: Vec<(String, String)> = Vec::new();
                    for c in r.configs() {
                        let Some(value) = c.value() else {
                            return Err((
                                ErrorCode::InvalidRequest,
                                std::format!("Null value not supported for : {}", c.name()),
                            ));
                        };
                        if configs.iter().any(|(n, _)| n == c.name()) {
                            return Err((
                                ErrorCode::InvalidRequest,
                                "Error due to duplicate config keys".into(),
                            ));
                        }
                        check_topic_config(c.name(), value).map_err(|m| (ErrorCode::InvalidConfig, m))?;
                        configs.push((c.name().to_string(), value.trim().to_string()));
                    }
                    self.set_topic_configs(r.resource_name(), a.validate_only(), |_| Ok(configs))
                })()
            };
            answers.push(answer);
        }
        let responses: Vec<AlterConfigsResourceResponse<'_>> = answers
            .iter()
            .zip(&keys)
            .map(|(answer, &(ty, name))| AlterConfigsResourceResponse {
                error_code: answer.as_ref().err().map_or(0, |e| e.0.to_i16()),
                error_message: answer.as_ref().err().map(|e| e.1.as_str().into()),
                resource_type: ty,
                resource_name: name.into(),
                ..Default::default()
            })
            .collect();
        let body = AlterConfigsResponse { responses: responses.into(), ..Default::default() };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }

    pub(super) fn incremental_alter_configs(
        &mut self,
        reply: ReplyTo,
        a: crate::codec::messages::IncrementalAlterConfigsRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::codec::messages::incremental_alter_configs::{
            AlterConfigsResourceResponse, IncrementalAlterConfigsResponse,
        };
        let resources: Vec<_> = a.resources().iter().collect();
        let keys: Vec<(i8, &str)> =
            resources.iter().map(|r| (r.resource_type(), r.resource_name())).collect();
        let mut answers = Vec::new();
        for (i, r) in resources.iter().enumerate() {
            let ops: Vec<(&str, i8, Option<&str>)> =
                r.configs().iter().map(|c| (c.name(), c.config_operation(), c.value())).collect();
            let refused = self.config_refused(r.resource_type(), r.resource_name(), op::ALTER_CONFIGS);
            let answer: Answer = if duplicated(&keys, i) {
                Err((ErrorCode::InvalidRequest, "Each resource must appear at most once.".into()))
            } else if let Some(refused) = refused {
                Err(refused)
            } else if ops.iter().enumerate().any(|(i, o)| ops[..i].iter().any(|p| p.0 == o.0)) {
                Err((ErrorCode::InvalidRequest, "Error due to duplicate config keys".into()))
            } else if let Some(o) = ops.iter().find(|o| !(SET..=SUBTRACT).contains(&o.1)) {
                Err((ErrorCode::InvalidRequest, std::format!("Unknown operation type {} for {}", o.1, o.0)))
            } else if r.resource_type() != TOPIC {
                Self::not_alterable(r.resource_type())
            } else {
                self.set_topic_configs(r.resource_name(), a.validate_only(), |current| {
                    let mut configs = current.to_vec();
                    for &(name, op, value) in &ops {
                        let Some(&(_, default, ty)) = TOPIC_CONFIGS.iter().find(|(n, _, _)| *n == name)
                        else {
                            return Err((
                                ErrorCode::InvalidConfig,
                                std::format!("Unknown topic config name: {name}"),
                            ));
                        };
                        let now =
                            configs.iter().find(|(n, _)| n == name).map_or(default, |(_, v)| v.as_str());
                        let new: Option<String> = match op {
                            SET => match value {
                                Some(v) => Some(v.trim().to_string()),
                                None => {
                                    return Err((
                                        ErrorCode::InvalidRequest,
                                        std::format!("Null value not supported for : {name}"),
                                    ));
                                }
                            },
                            DELETE => None,
                            _ if ty != 7 => {
                                let verb = if op == APPEND { "append" } else { "subtract" };
                                return Err((
                                    ErrorCode::InvalidConfig,
                                    std::format!("Config value {verb} is not allowed for config key: {name}"),
                                ));
                            }
                            _ => {
                                let items = |s: &str| -> Vec<String> {
                                    s.split(',')
                                        .map(str::trim)
                                        .filter(|x| !x.is_empty())
                                        .map(Into::into)
                                        .collect()
                                };
                                let mut list = items(now);
                                for item in items(value.unwrap_or_default()) {
                                    if op == APPEND && !list.contains(&item) {
                                        list.push(item);
                                    } else if op == SUBTRACT {
                                        list.retain(|x| *x != item);
                                    }
                                }
                                Some(list.join(","))
                            }
                        };
                        configs.retain(|(n, _)| n != name);
                        if let Some(v) = new {
                            check_topic_config(name, &v).map_err(|m| (ErrorCode::InvalidConfig, m))?;
                            configs.push((name.to_string(), v));
                        }
                    }
                    Ok(configs)
                })
            };
            answers.push(answer);
        }
        let responses: Vec<AlterConfigsResourceResponse<'_>> = answers
            .iter()
            .zip(&keys)
            .map(|(answer, &(ty, name))| AlterConfigsResourceResponse {
                error_code: answer.as_ref().err().map_or(0, |e| e.0.to_i16()),
                error_message: answer.as_ref().err().map(|e| e.1.as_str().into()),
                resource_type: ty,
                resource_name: name.into(),
                ..Default::default()
            })
            .collect();
        let body = IncrementalAlterConfigsResponse { responses: responses.into(), ..Default::default() };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }

    pub(super) fn describe_configs(
        &mut self,
        reply: ReplyTo,
        d: crate::codec::messages::DescribeConfigsRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::codec::messages::describe_configs::{
            DescribeConfigsResourceResult, DescribeConfigsResponse, DescribeConfigsResult,
        };
        let config = &self.shared.config;
        let node_id = self.endpoint(self.node).0;
        let broker_configs: Vec<(&str, String, i8)> = std::vec![
            ("auto.create.topics.enable", config.auto_create_topics.to_string(), 1),
            ("broker.id", node_id.to_string(), 3),
            ("default.replication.factor", "1".into(), 3),
            ("message.max.bytes", config.max_message_bytes.to_string(), 3),
            ("num.partitions", config.default_partitions.to_string(), 3),
            ("offsets.topic.replication.factor", "1".into(), 4),
        ];
        // (name, value, config source, config type)
        type Entry = (String, String, i8, i8);
        let mut results = Vec::new();
        for r in d.resources() {
            let keys: Option<Vec<&str>> = r.configuration_keys().map(|k| k.iter().collect());
            let wanted = |name: &str| keys.as_ref().is_none_or(|k| k.is_empty() || k.contains(&name));
            let name = r.resource_name();
            let refused = self.config_refused(r.resource_type(), name, op::DESCRIBE_CONFIGS);
            let (code, message, entries): (ErrorCode, Option<String>, Vec<Entry>) =
                match (refused, r.resource_type()) {
                    (Some((code, message)), _) => (code, Some(message), Vec::new()),
                    (None, 2) => {
                        match self.shared.topics.with(|all| all.get(name).map(|t| t.configs.clone())) {
                            None => (
                                // Kafka's ConfigHelper leaves the message at its default, "".
                                ErrorCode::UnknownTopicOrPartition,
                                Some(String::new()),
                                Vec::new(),
                            ),
                            Some(set) => (
                                ErrorCode::None,
                                Some(String::new()),
                                TOPIC_CONFIGS
                                    .iter()
                                    .filter(|(n, _, _)| wanted(n))
                                    .map(|&(n, default, ty)| match set.iter().find(|(k, _)| k == n) {
                                        Some((_, value)) => (n.to_string(), value.clone(), 1, ty),
                                        None => (n.to_string(), default.to_string(), 5, ty),
                                    })
                                    .collect(),
                            ),
                        }
                    }
                    (None, 4) if name.is_empty() || name == node_id.to_string() => (
                        ErrorCode::None,
                        Some(String::new()),
                        broker_configs
                            .iter()
                            .filter(|(n, _, _)| wanted(n))
                            .map(|(n, value, ty)| (n.to_string(), value.clone(), 4, *ty))
                            .collect(),
                    ),
                    (None, 4) => {
                        (ErrorCode::InvalidRequest, Some(std::format!("unknown broker {name}")), Vec::new())
                    }
                    (None, other) => (
                        ErrorCode::InvalidRequest,
                        Some(std::format!("resource type {other} is not described by this broker")),
                        Vec::new(),
                    ),
                };
            results.push((code, message, r.resource_type(), name.to_string(), entries));
        }
        let results: Vec<DescribeConfigsResult<'_>> = results
            .iter()
            .map(|(code, message, ty, name, entries)| DescribeConfigsResult {
                error_code: code.to_i16(),
                error_message: message.as_deref().map(Into::into),
                resource_type: *ty,
                resource_name: name.as_str().into(),
                configs: entries
                    .iter()
                    .map(|(n, value, source, config_type)| DescribeConfigsResourceResult {
                        name: n.as_str().into(),
                        value: Some(value.as_str().into()),
                        read_only: *ty == 4,
                        config_source: *source,
                        is_sensitive: false,
                        config_type: if reply.api_version >= 3 { *config_type } else { 0 },
                        // Kafka's documentation is null unless asked for, and kwire has none.
                        documentation: None,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect();
        let body = DescribeConfigsResponse { results: results.into(), ..Default::default() };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }
}
