//! The ACL APIs: CreateAcls, DescribeAcls and DeleteAcls over the stored bindings
//! (`super::super::acl`). CreateAcls and DeleteAcls need ALTER on the cluster, else each
//! entry is CLUSTER_AUTHORIZATION_FAILED, as Kafka answers.

use super::*;
use crate::apps::broker::acl::{Binding, Filter};

impl Handler<'_> {
    pub(super) fn create_acls(
        &mut self,
        reply: ReplyTo,
        c: crate::codec::messages::CreateAclsRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::codec::messages::create_acls::{AclCreationResult, CreateAclsResponse};
        let mut answers: Vec<Option<(ErrorCode, String)>> = Vec::new();
        let authorized = self.allowed(op::ALTER, resource::CLUSTER, CLUSTER_NAME);
        // A binding of ANY resource type, operation or permission, or of the MATCH or ANY
        // pattern type, is no binding at all: Kafka fails the whole request with an
        // unknown server error (its `ResourcePattern` and `AccessControlEntry` refuse them).
        let unbindable = c.creations().iter().any(|a| {
            a.resource_type() == 1
                || matches!(a.resource_pattern_type(), 1 | 2)
                || a.operation() == 1
                || a.permission_type() == 1
        });
        for a in c.creations() {
            if !authorized {
                answers.push(Some((ErrorCode::ClusterAuthorizationFailed, CLUSTER_REFUSED.into())));
                continue;
            }
            if unbindable {
                answers.push(Some((ErrorCode::UnknownServerError, String::new())));
                continue;
            }
            let b = Binding {
                resource_type: a.resource_type(),
                resource_name: a.resource_name().into(),
                pattern_type: a.resource_pattern_type(),
                principal: a.principal().into(),
                host: a.host().into(),
                operation: a.operation(),
                permission_type: a.permission_type(),
            };
            answers.push(match b.invalid() {
                Some(m) => Some((ErrorCode::InvalidRequest, m)),
                None if !self.shared.acls.create(b) => Some((
                    ErrorCode::PolicyViolation,
                    std::format!("this broker keeps at most {} ACLs", crate::apps::broker::acl::MAX_ACLS),
                )),
                None => None,
            });
        }
        let results: Vec<AclCreationResult<'_>> = answers
            .iter()
            .map(|a| AclCreationResult {
                error_code: a.as_ref().map_or(0, |e| e.0.to_i16()),
                // Kafka's message is empty on success, absent for an unknown server error.
                error_message: match a {
                    None => Some("".into()),
                    Some((ErrorCode::UnknownServerError, _)) => None,
                    Some((_, m)) => Some(m.as_str().into()),
                },
                ..Default::default()
            })
            .collect();
        let body = CreateAclsResponse { results: results.into(), ..Default::default() };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }

    pub(super) fn describe_acls(
        &mut self,
        reply: ReplyTo,
        d: crate::codec::messages::DescribeAclsRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::codec::messages::describe_acls::{
            AclDescription, DescribeAclsResource, DescribeAclsResponse,
        };
        let filter = Filter {
            resource_type: d.resource_type_filter(),
            resource_name: d.resource_name_filter(),
            pattern_type: d.pattern_type_filter(),
            principal: d.principal_filter(),
            host: d.host_filter(),
            operation: d.operation(),
            permission_type: d.permission_type(),
        };
        if let Some(m) = filter.invalid() {
            let body = DescribeAclsResponse {
                error_code: ErrorCode::InvalidRequest.to_i16(),
                error_message: Some(m.as_str().into()),
                ..Default::default()
            };
            ServerConn::encode_response(reply, &body, out)?;
            return Ok(());
        }
        let found = self.shared.acls.describe(&filter);
        // Grouped by resource pattern, in the order first seen.
        // (resource type, name, pattern type)
        type Resource<'b> = (i8, &'b str, i8);
        let mut resources: Vec<(Resource<'_>, Vec<&Binding>)> = Vec::new();
        let mut at: std::collections::HashMap<Resource<'_>, usize> = std::collections::HashMap::new();
        for b in &found {
            let key = (b.resource_type, b.resource_name.as_str(), b.pattern_type);
            match at.get(&key) {
                Some(&i) => resources[i].1.push(b),
                None => {
                    at.insert(key, resources.len());
                    resources.push((key, std::vec![b]));
                }
            }
        }
        let resources: Vec<DescribeAclsResource<'_>> = resources
            .iter()
            .map(|((ty, name, pattern), list)| DescribeAclsResource {
                resource_type: *ty,
                resource_name: (*name).into(),
                pattern_type: *pattern,
                acls: list
                    .iter()
                    .map(|b| AclDescription {
                        principal: b.principal.as_str().into(),
                        host: b.host.as_str().into(),
                        operation: b.operation,
                        permission_type: b.permission_type,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect();
        let body = DescribeAclsResponse {
            error_message: Some("".into()),
            resources: resources.into(),
            ..Default::default()
        };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }

    pub(super) fn delete_acls(
        &mut self,
        reply: ReplyTo,
        d: crate::codec::messages::DeleteAclsRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::codec::messages::delete_acls::{
            DeleteAclsFilterResult, DeleteAclsMatchingAcl, DeleteAclsResponse,
        };
        let mut answers: Vec<Result<Vec<Binding>, (ErrorCode, String)>> = Vec::new();
        let authorized = self.allowed(op::ALTER, resource::CLUSTER, CLUSTER_NAME);
        for f in d.filters() {
            if !authorized {
                answers.push(Err((ErrorCode::ClusterAuthorizationFailed, CLUSTER_REFUSED.into())));
                continue;
            }
            let filter = Filter {
                resource_type: f.resource_type_filter(),
                resource_name: f.resource_name_filter(),
                pattern_type: f.pattern_type_filter(),
                principal: f.principal_filter(),
                host: f.host_filter(),
                operation: f.operation(),
                permission_type: f.permission_type(),
            };
            answers.push(match filter.invalid() {
                Some(m) => Err((ErrorCode::InvalidRequest, m)),
                None => Ok(self.shared.acls.delete(&filter)),
            });
        }
        let results: Vec<DeleteAclsFilterResult<'_>> = answers
            .iter()
            .map(|a| match a {
                Err((code, m)) => DeleteAclsFilterResult {
                    error_code: code.to_i16(),
                    error_message: Some(m.as_str().into()),
                    ..Default::default()
                },
                Ok(gone) => DeleteAclsFilterResult {
                    error_message: None,
                    matching_acls: gone
                        .iter()
                        .map(|b| DeleteAclsMatchingAcl {
                            error_message: None,
                            resource_type: b.resource_type,
                            resource_name: b.resource_name.as_str().into(),
                            pattern_type: b.pattern_type,
                            principal: b.principal.as_str().into(),
                            host: b.host.as_str().into(),
                            operation: b.operation,
                            permission_type: b.permission_type,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                },
            })
            .collect();
        let body = DeleteAclsResponse { filter_results: results.into(), ..Default::default() };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }
}
