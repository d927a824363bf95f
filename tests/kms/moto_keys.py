"""Prepares a fresh moto server for tests/kms_aws.rs and prints what it made as one JSON line.

    moto_keys.py ENDPOINT

The server runs with INITIAL_NO_AUTH_ACTION_COUNT=3: its first three requests go unchecked,
every later one must be signed (SigV4) by a user it knows and allowed by that user's policy.
The three are this script's IAM calls: a user `kwire`, an access key for it, and a policy
allowing it every KMS action. Then, as that user, two symmetric keys, an alias for the first
(`alias/kwire-records`), and the JSON line: the access key, the key ids and ARNs, the alias.
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
policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "kms:*", "Resource": "*"}]}
iam.put_user_policy(UserName="kwire", PolicyName="kms", PolicyDocument=json.dumps(policy))

kms = client("kms", key["AccessKeyId"], key["SecretAccessKey"])
a = kms.create_key(Description="kwire test KEK a")["KeyMetadata"]
b = kms.create_key(Description="kwire test KEK b")["KeyMetadata"]
kms.create_alias(AliasName="alias/kwire-records", TargetKeyId=a["KeyId"])
print(
    json.dumps(
        {
            "region": region,
            "access_key_id": key["AccessKeyId"],
            "secret_access_key": key["SecretAccessKey"],
            "a_id": a["KeyId"],
            "a_arn": a["Arn"],
            "b_id": b["KeyId"],
            "alias": "alias/kwire-records",
        }
    )
)
