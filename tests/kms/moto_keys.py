"""Prepares a fresh moto server for tests/kms_aws.rs and prints what it made as one JSON line.

    moto_keys.py ENDPOINT

The server runs with INITIAL_NO_AUTH_ACTION_COUNT=5: its first five requests go unchecked,
every later one must be signed (SigV4) by a user or role session it knows and be allowed by its
policy. The five are this script's IAM calls: a user `kwire`, an access key for it, a policy
allowing it every KMS action and assuming roles, a role `kwire-role` and a policy allowing the
role every KMS action. Then, as that user, two symmetric keys, an alias for the first
(`alias/kwire-records`) and a session of the role (temporary credentials, with a session
token), and the JSON line: the access key, the session, the key ids and ARNs, the alias.
"""

import json
import sys

import boto3

endpoint = sys.argv[1]
region = "eu-west-1"


def client(service, key_id, secret):
    return boto3.client(
        service,
        endpoint_url=endpoint,
        region_name=region,
        aws_access_key_id=key_id,
        aws_secret_access_key=secret,
    )


iam = client("iam", "unchecked", "unchecked")
iam.create_user(UserName="kwire")
key = iam.create_access_key(UserName="kwire")["AccessKey"]

def allow(*actions):
    return json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": list(actions), "Resource": "*"}]})


iam.put_user_policy(UserName="kwire", PolicyName="kms", PolicyDocument=allow("kms:*", "sts:AssumeRole"))
trust = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}],
}
role = iam.create_role(RoleName="kwire-role", AssumeRolePolicyDocument=json.dumps(trust))["Role"]
iam.put_role_policy(RoleName="kwire-role", PolicyName="kms", PolicyDocument=allow("kms:*"))

kms = client("kms", key["AccessKeyId"], key["SecretAccessKey"])
a = kms.create_key(Description="kwire test KEK a")["KeyMetadata"]
b = kms.create_key(Description="kwire test KEK b")["KeyMetadata"]
kms.create_alias(AliasName="alias/kwire-records", TargetKeyId=a["KeyId"])
sts = client("sts", key["AccessKeyId"], key["SecretAccessKey"])
session = sts.assume_role(RoleArn=role["Arn"], RoleSessionName="kwire-test")["Credentials"]
print(
    json.dumps(
        {
            "region": region,
            "access_key_id": key["AccessKeyId"],
            "secret_access_key": key["SecretAccessKey"],
            "session_key_id": session["AccessKeyId"],
            "session_secret": session["SecretAccessKey"],
            "session_token": session["SessionToken"],
            "a_id": a["KeyId"],
            "a_arn": a["Arn"],
            "b_id": b["KeyId"],
            "alias": "alias/kwire-records",
        }
    )
)
