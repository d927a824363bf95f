//! The cluster and its topics: ApiVersions, Metadata, DescribeCluster, CreateTopics,
//! CreatePartitions and DeleteTopics.

use super::*;

impl Handler<'_> {
    pub(super) fn api_versions(
        &mut self,
        reply: ReplyTo,
        _req: crate::codec::messages::ApiVersionsRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::codec::messages::api_versions::{ApiVersion, ApiVersionsResponse};
        let keys: Vec<ApiVersion<'_>> = self
            .shared
            .served()
            .iter()
            .map(|&(k, served)| {
                // Produce is advertised from 0 and served from 3, as Kafka 4.x does.
                let r = k.advertised(served);
                ApiVersion {
                    api_key: k.to_i16(),
                    min_version: r.min,
                    max_version: r.max,
                    ..Default::default()
                }
            })
            .collect();
        let body = ApiVersionsResponse { api_keys: keys.into(), ..Default::default() };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }

    pub(super) fn metadata(
        &mut self,
        reply: ReplyTo,
        m: crate::codec::messages::MetadataRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        let v = reply.api_version;
        let node = self.shared.config.node_id;
        use crate::codec::messages::metadata::{
            MetadataResponse, MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
        };
        let auto = self.shared.config.auto_create_topics && (v < 4 || m.allow_auto_topic_creation());
        let wanted: Option<Vec<(Option<String>, Uuid)>> = match m.topics() {
            None => None,
            Some(t) if v == 0 && t.is_empty() => None,
            Some(t) => Some(t.iter().map(|t| (t.name().map(Into::into), t.topic_id())).collect()),
        };
        let mut answers: Vec<(i16, Option<String>, Uuid, i32)> = Vec::new();
        match wanted {
            // Every topic the principal may describe (the others are left out).
            None => self.shared.topics.with(|all| {
                for t in all.values().filter(|t| self.allowed(op::DESCRIBE, resource::TOPIC, &t.name)) {
                    answers.push((0, Some(t.name.clone()), t.id, t.partitions.len() as i32));
                }
            }),
            Some(list) => {
                for (name, id) in list {
                    let by_id = name.is_none();
                    let name = match name {
                        Some(n) => n,
                        None => match self.shared.topics.name_of(id) {
                            Some(n) => n,
                            None => {
                                answers.push((ErrorCode::UnknownTopicId.to_i16(), None, id, 0));
                                continue;
                            }
                        },
                    };
                    let found =
                        self.shared.topics.with(|all| all.get(&name).map(|t| (t.id, t.partitions.len())));
                    // Asked for by name but not describable: refused, existing or not; a
                    // topic to create needs CREATE on the cluster or the topic.
                    let create = || {
                        [(resource::CLUSTER, CLUSTER_NAME), (resource::TOPIC, name.as_str())]
                            .iter()
                            .any(|(rt, n)| self.allowed(op::CREATE, *rt, n))
                    };
                    // (Asked by id: the id is given back, not the name.)
                    if !self.allowed(op::DESCRIBE, resource::TOPIC, &name)
                        || (found.is_none() && auto && !create())
                    {
                        let code = ErrorCode::TopicAuthorizationFailed.to_i16();
                        answers.push(if by_id {
                            (code, None, id, 0)
                        } else {
                            (code, Some(name), Uuid::ZERO, 0)
                        });
                        continue;
                    }
                    match found {
                        Some((id, n)) => answers.push((0, Some(name), id, n as i32)),
                        None if valid_topic_name(&name).is_err() => answers.push((
                            ErrorCode::InvalidTopicException.to_i16(),
                            Some(name),
                            Uuid::ZERO,
                            0,
                        )),
                        None if auto => {
                            let n = self.shared.config.default_partitions;
                            match self.shared.topics.create(self.shared, &name, n, Vec::new()) {
                                Ok(id) => {
                                    self.shared
                                        .log(format_args!("auto-created topic {name} ({n} partitions)"));
                                    answers.push((0, Some(name), id, n));
                                }
                                Err(_) => {
                                    let again = self.shared.topics.with(|all| {
                                        all.get(&name).map(|t| (t.id, t.partitions.len() as i32))
                                    });
                                    match again {
                                        Some((id, n)) => answers.push((0, Some(name), id, n)),
                                        None => answers.push((
                                            ErrorCode::UnknownTopicOrPartition.to_i16(),
                                            Some(name),
                                            Uuid::ZERO,
                                            0,
                                        )),
                                    }
                                }
                            }
                        }
                        None => answers.push((
                            ErrorCode::UnknownTopicOrPartition.to_i16(),
                            Some(name),
                            Uuid::ZERO,
                            0,
                        )),
                    }
                }
            }
        }
        // Each described topic's authorized operations, when asked for (not those refused or
        // unknown by id, as in Kafka).
        let topic_ops = v >= 8 && m.include_topic_authorized_operations();
        let cluster_ops = if (8..=10).contains(&v) && m.include_cluster_authorized_operations() {
            self.cluster_operations()
        } else {
            i32::MIN
        };
        // Each partition's leader (node id, epoch); its only replica, as the logs are shared
        // and never replicated (a topic's replication factor is 1).
        let nodes = &self.shared.cluster.nodes;
        let leaders: Vec<Vec<(i32, i32)>> = answers
            .iter()
            .map(|(_, name, _, _)| {
                let parts = name
                    .as_deref()
                    .and_then(|n| self.shared.topics.with(|all| all.get(n).map(|t| t.partitions.clone())));
                parts
                    .unwrap_or_default()
                    .iter()
                    .map(|p| {
                        let (i, epoch) = p.leader();
                        (nodes[i].id, epoch)
                    })
                    .collect()
            })
            .collect();
        let topics: Vec<MetadataResponseTopic<'_>> = answers
            .into_iter()
            .zip(&leaders)
            .map(|((error_code, name, topic_id, n), leaders)| {
                let ops = match name.as_deref() {
                    Some(n) if topic_ops && error_code != ErrorCode::TopicAuthorizationFailed.to_i16() => {
                        self.authorized_operations(resource::TOPIC, n)
                    }
                    _ => i32::MIN,
                };
                MetadataResponseTopic {
                    error_code,
                    name: name.map(Into::into),
                    topic_id: if v >= 10 { topic_id } else { Uuid::ZERO },
                    is_internal: false,
                    partitions: (0..n)
                        .map(|i| {
                            let (leader, epoch) = leaders.get(i as usize).copied().unwrap_or((node, 0));
                            MetadataResponsePartition {
                                error_code: 0,
                                partition_index: i,
                                leader_id: leader,
                                leader_epoch: if v >= 7 { epoch } else { -1 },
                                replica_nodes: std::vec![leader].into(),
                                isr_nodes: std::vec![leader].into(),
                                offline_replicas: List::Borrowed(&[]),
                                ..Default::default()
                            }
                        })
                        .collect(),
                    topic_authorized_operations: ops,
                    ..Default::default()
                }
            })
            .collect();
        let live = self.shared.cluster.live();
        let brokers: Vec<MetadataResponseBroker<'_>> = live
            .iter()
            .map(|&i| MetadataResponseBroker {
                node_id: nodes[i].id,
                host: nodes[i].host.as_str().into(),
                port: nodes[i].port,
                rack: None,
                ..Default::default()
            })
            .collect();
        let body = MetadataResponse {
            brokers: brokers.into(),
            cluster_id: (v >= 2).then(|| self.shared.config.cluster_id.as_str().into()),
            controller_id: if v >= 1 { self.controller() } else { -1 },
            topics: topics.into(),
            cluster_authorized_operations: cluster_ops,
            ..Default::default()
        };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }

    /// The controller id clients are told: the first running node (as a KRaft broker
    /// names a live broker).
    fn controller(&self) -> i32 {
        let cluster = &self.shared.cluster;
        cluster.live().first().map_or(self.shared.config.node_id, |&i| cluster.nodes[i].id)
    }

    pub(super) fn describe_cluster(
        &mut self,
        reply: ReplyTo,
        d: crate::codec::messages::DescribeClusterRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        let v = reply.api_version;
        use crate::codec::messages::describe_cluster::{DescribeClusterBroker, DescribeClusterResponse};
        let nodes = &self.shared.cluster.nodes;
        let brokers: Vec<DescribeClusterBroker<'_>> = self
            .shared
            .cluster
            .live()
            .into_iter()
            .map(|i| DescribeClusterBroker {
                broker_id: nodes[i].id,
                host: nodes[i].host.as_str().into(),
                port: nodes[i].port,
                rack: None,
                is_fenced: false,
                ..Default::default()
            })
            .collect();
        let ops =
            if d.include_cluster_authorized_operations() { self.cluster_operations() } else { i32::MIN };
        let body = DescribeClusterResponse {
            endpoint_type: if v >= 1 { d.endpoint_type() } else { 1 },
            cluster_id: self.shared.config.cluster_id.as_str().into(),
            controller_id: self.controller(),
            brokers: brokers.into(),
            cluster_authorized_operations: ops,
            ..Default::default()
        };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }

    pub(super) fn create_partitions(
        &mut self,
        reply: ReplyTo,
        c: crate::codec::messages::CreatePartitionsRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::codec::messages::create_partitions::{
            CreatePartitionsResponse, CreatePartitionsTopicResult,
        };
        let mut results = Vec::new();
        for t in c.topics() {
            let authorized = self.allowed(op::ALTER, resource::TOPIC, t.name());
            let (code, message) =
                self.shared.topics.with(|all| match all.get_mut(t.name()) {
                    _ if !authorized => (ErrorCode::TopicAuthorizationFailed, None),
                    None => (ErrorCode::UnknownTopicOrPartition, None),
                    Some(topic) if (t.count() as usize) <= topic.partitions.len() || t.count() > 100_000 => (
                        ErrorCode::InvalidPartitions,
                        Some(std::format!(
                            "Topic currently has {} partitions, which is higher than the requested {}.",
                            topic.partitions.len(),
                            t.count()
                        )),
                    ),
                    Some(topic)
                        if t.assignments().is_some_and(|a| {
                            a.len() != t.count() as usize - topic.partitions.len()
                        }) =>
                    {
                        (
                            ErrorCode::InvalidReplicaAssignment,
                            Some(std::format!(
                                "Attempted to add {} additional partition(s), but only {} assignment(s) were specified.",
                                t.count() as usize - topic.partitions.len(),
                                t.assignments().map_or(0, |a| a.len())
                            )),
                        )
                    }
                    Some(topic) => {
                        if !c.validate_only() {
                            let have = topic.partitions.len();
                            let leaders = self.shared.cluster.place(have, t.count() as usize - have);
                            topic.partitions.extend(leaders.into_iter().map(|node| {
                                std::sync::Arc::new(super::super::state::Partition::led_by(node))
                            }));
                        }
                        (ErrorCode::None, None)
                    }
                });
            results.push(CreatePartitionsTopicResult {
                name: t.name().into(),
                error_code: code.to_i16(),
                error_message: message.map(Into::into),
                ..Default::default()
            });
        }
        let body = CreatePartitionsResponse { results: results.into(), ..Default::default() };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }

    pub(super) fn delete_topics(
        &mut self,
        reply: ReplyTo,
        d: crate::codec::messages::DeleteTopicsRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        let v = reply.api_version;
        use crate::codec::messages::delete_topics::{DeletableTopicResult, DeleteTopicsResponse};
        let wanted: Vec<(Option<String>, Uuid)> = if v >= 6 {
            d.topics().iter().map(|t| (t.name().map(Into::into), t.topic_id())).collect()
        } else {
            d.topic_names().iter().map(|n| (Some(n.to_string()), Uuid::ZERO)).collect()
        };
        let mut results = Vec::new();
        for (name, id) in wanted {
            let by_id = name.is_none();
            let name = name.or_else(|| self.shared.topics.name_of(id));
            if name.as_deref().is_some_and(|n| !self.allowed(op::DELETE, resource::TOPIC, n)) {
                // As Kafka answers: the name only where the request gave it.
                results.push(DeletableTopicResult {
                    name: if by_id { None } else { name.map(Into::into) },
                    topic_id: if v >= 6 { id } else { Uuid::ZERO },
                    error_code: ErrorCode::TopicAuthorizationFailed.to_i16(),
                    error_message: Some("Topic authorization failed.".into()),
                    ..Default::default()
                });
                continue;
            }
            let removed = name.as_ref().and_then(|n| self.shared.topics.with(|all| all.remove(n)));
            let (code, topic_id) = match &removed {
                Some(t) => (ErrorCode::None, t.id),
                None if name.is_none() => (ErrorCode::UnknownTopicId, id),
                None => (ErrorCode::UnknownTopicOrPartition, id),
            };
            if let Some(n) = removed.as_ref().map(|t| t.name.clone()) {
                self.shared.groups.forget_topic(&n);
                self.shared.log(format_args!("deleted topic {n}"));
            }
            // Kafka's controller answers a failure with its error's default message.
            let error_message = match code {
                ErrorCode::UnknownTopicId => Some("This server does not host this topic ID.".into()),
                ErrorCode::UnknownTopicOrPartition => {
                    Some("This server does not host this topic-partition.".into())
                }
                _ => None,
            };
            results.push(DeletableTopicResult {
                name: name.map(Into::into),
                topic_id: if v >= 6 { topic_id } else { Uuid::ZERO },
                error_code: code.to_i16(),
                error_message,
                ..Default::default()
            });
        }
        // Fetches waiting on a deleted topic's partitions look again.
        self.shared.appended();
        let body = DeleteTopicsResponse { responses: results.into(), ..Default::default() };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }

    pub(super) fn create_topics(
        &mut self,
        reply: ReplyTo,
        c: crate::codec::messages::CreateTopicsRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::codec::messages::create_topics::{
            CreatableTopicConfigs, CreatableTopicResult, CreateTopicsResponse,
        };
        let node = self.shared.config.node_id;
        let mut results = Vec::new();
        for t in c.topics() {
            let name = t.name();
            let mut partitions = if t.num_partitions() == -1 {
                self.shared.config.default_partitions
            } else {
                t.num_partitions()
            };
            let rf = if t.replication_factor() == -1 { 1 } else { t.replication_factor() };
            let assignments = t.assignments();
            let check = (|| -> Result<Vec<(String, String)>, (ErrorCode, String)> {
                let may_create = [(resource::CLUSTER, CLUSTER_NAME), (resource::TOPIC, name)]
                    .iter()
                    .any(|&(rt, n)| self.allowed(op::CREATE, rt, n));
                if !may_create {
                    return Err((ErrorCode::TopicAuthorizationFailed, "Authorization failed.".into()));
                }
                valid_topic_name(name).map_err(|m| (ErrorCode::InvalidTopicException, m))?;
                if !assignments.is_empty() {
                    if t.num_partitions() != -1 || t.replication_factor() != -1 {
                        return Err((
                            ErrorCode::InvalidRequest,
                            "Both numPartitions or replicationFactor and replicasAssignments were set."
                                .into(),
                        ));
                    }
                    if assignments.iter().any(|a| a.broker_ids().iter().collect::<Vec<i32>>() != [node]) {
                        return Err((
                            ErrorCode::InvalidReplicaAssignment,
                            std::format!("every replica must be broker {node}"),
                        ));
                    }
                    partitions = assignments.len() as i32;
                } else if rf != 1 {
                    return Err((
                        ErrorCode::InvalidReplicationFactor,
                        std::format!(
                            "Unable to replicate the partition {rf} time(s): The target replication factor of {rf} cannot be reached because only 1 broker(s) are registered."
                        ),
                    ));
                }
                if partitions <= 0 {
                    return Err((
                        ErrorCode::InvalidPartitions,
                        "Number of partitions must be larger than 0.".into(),
                    ));
                }
                let mut configs = Vec::new();
                for cfg in t.configs() {
                    if !TOPIC_CONFIGS.iter().any(|(n, _, _)| *n == cfg.name()) {
                        return Err((
                            ErrorCode::InvalidConfig,
                            std::format!("Unknown topic config name: {}", cfg.name()),
                        ));
                    }
                    let Some(value) = cfg.value() else {
                        return Err((
                            ErrorCode::InvalidConfig,
                            std::format!("Null value not supported for topic configs: {}", cfg.name()),
                        ));
                    };
                    super::configs::check_topic_config(cfg.name(), value)
                        .map_err(|m| (ErrorCode::InvalidConfig, m))?;
                    configs.push((cfg.name().to_string(), value.trim().to_string()));
                }
                if self.shared.topics.id_of(name).is_some() {
                    return Err((
                        ErrorCode::TopicAlreadyExists,
                        std::format!("Topic '{name}' already exists."),
                    ));
                }
                Ok(configs)
            })();
            let result = match check {
                Err(e) => Err(e),
                // Kafka's controller draws the id before it looks at validate_only, and
                // answers with it (an id no topic gets).
                Ok(configs) if c.validate_only() => Ok((self.shared.new_uuid(name, -1), configs)),
                Ok(configs) => self
                    .shared
                    .topics
                    .create(self.shared, name, partitions, configs.clone())
                    .map(|id| (id, configs)),
            };
            results.push(match result {
                Ok((id, configs)) => {
                    let described: Vec<CreatableTopicConfigs<'_>> = TOPIC_CONFIGS
                        .iter()
                        .map(|&(n, default, _)| {
                            let set = configs.iter().find(|(k, _)| k == n);
                            CreatableTopicConfigs {
                                name: n.into(),
                                value: Some(set.map_or(default, |(_, v)| v.as_str()).to_string().into()),
                                read_only: false,
                                config_source: if set.is_some() { 1 } else { 5 },
                                is_sensitive: false,
                                ..Default::default()
                            }
                        })
                        .collect();
                    if reply.api_version >= 5 {
                        CreatableTopicResult {
                            name: name.into(),
                            topic_id: if reply.api_version >= 7 { id } else { Uuid::ZERO },
                            num_partitions: partitions,
                            replication_factor: 1,
                            configs: Some(described.into()),
                            error_message: None,
                            ..Default::default()
                        }
                    } else {
                        CreatableTopicResult { name: name.into(), error_message: None, ..Default::default() }
                    }
                }
                Err((code, message)) => CreatableTopicResult {
                    name: name.into(),
                    error_code: code.to_i16(),
                    error_message: Some(message.into()),
                    num_partitions: -1,
                    replication_factor: -1,
                    ..Default::default()
                },
            });
        }
        let body = CreateTopicsResponse { topics: results.into(), ..Default::default() };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }
}
