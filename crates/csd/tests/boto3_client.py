"""A second, independent S3 client against `strata csd serve`: boto3.

Run by tests/boto3.rs as `python3 boto3_client.py ENDPOINT`; exits non-zero
with the failing check on stderr. Every check compares with what S3 itself
would answer: bytes, ranges, listings, and the error codes clients act on.
"""

import sys

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError


def error_code(exc):
    return exc.response.get("Error", {}).get("Code")


def expect_error(code, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except ClientError as exc:
        got = error_code(exc)
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if got != code and str(status) != code:
            raise AssertionError(f"expected {code}, got {got} (HTTP {status}): {exc}")
        return exc
    raise AssertionError(f"expected {code}, the call succeeded")


def main():
    endpoint = sys.argv[1]
    s3 = boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="strata",
        aws_secret_access_key="strata-secret",
        config=Config(s3={"addressing_style": "path"}, signature_version="s3v4", retries={"max_attempts": 1}),
    )

    s3.create_bucket(Bucket="boto-data")
    names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
    assert "boto-data" in names, names
    s3.head_bucket(Bucket="boto-data")

    body = bytes((i * 7) % 251 for i in range(70_000))
    s3.put_object(Bucket="boto-data", Key="lineitem/seg.0000", Body=body)
    s3.put_object(Bucket="boto-data", Key="lineitem/seg.0001", Body=b"tail")
    s3.put_object(Bucket="boto-data", Key="orders/seg.0000", Body=b"o" * 10, Metadata={})

    resp = s3.get_object(Bucket="boto-data", Key="lineitem/seg.0000")
    assert resp["Body"].read() == body, "whole object"
    assert "x-csd-group" in resp["ResponseMetadata"]["HTTPHeaders"], resp["ResponseMetadata"]["HTTPHeaders"]
    for header, want in [
        ("bytes=100-199", body[100:200]),
        ("bytes=69990-", body[69990:]),
        ("bytes=-3", body[-3:]),
    ]:
        resp = s3.get_object(Bucket="boto-data", Key="lineitem/seg.0000", Range=header)
        assert resp["Body"].read() == want, header
        assert resp["ResponseMetadata"]["HTTPStatusCode"] == 206, header

    head = s3.head_object(Bucket="boto-data", Key="lineitem/seg.0000")
    assert head["ContentLength"] == len(body), head

    listed = s3.list_objects_v2(Bucket="boto-data", Prefix="lineitem/")
    assert [o["Key"] for o in listed["Contents"]] == ["lineitem/seg.0000", "lineitem/seg.0001"], listed
    top = s3.list_objects_v2(Bucket="boto-data", Delimiter="/")
    assert [p["Prefix"] for p in top["CommonPrefixes"]] == ["lineitem/", "orders/"], top
    page = s3.list_objects_v2(Bucket="boto-data", MaxKeys=2)
    assert page["IsTruncated"] and page["KeyCount"] == 2, page
    rest = s3.list_objects_v2(Bucket="boto-data", MaxKeys=2, ContinuationToken=page["NextContinuationToken"])
    assert [o["Key"] for o in rest["Contents"]] == ["orders/seg.0000"], rest
    assert not rest["IsTruncated"], rest

    exc = expect_error("NoSuchKey", s3.get_object, Bucket="boto-data", Key="lineitem/seg.0009")
    assert "lineitem/seg.0009" in exc.response["Error"].get("Message", ""), exc.response
    exc = expect_error("InvalidRange", s3.get_object, Bucket="boto-data", Key="orders/seg.0000", Range="bytes=50-60")
    assert "orders/seg.0000" in exc.response["Error"].get("Message", ""), exc.response
    expect_error("NoSuchBucket", s3.get_object, Bucket="no-such-bucket", Key="x")
    expect_error("404", s3.head_object, Bucket="boto-data", Key="missing")
    expect_error("BucketNotEmpty", s3.delete_bucket, Bucket="boto-data")

    s3.delete_object(Bucket="boto-data", Key="orders/seg.0000")
    expect_error("NoSuchKey", s3.get_object, Bucket="boto-data", Key="orders/seg.0000")
    deleted = s3.delete_objects(
        Bucket="boto-data",
        Delete={"Objects": [{"Key": "lineitem/seg.0000"}, {"Key": "lineitem/seg.0001"}]},
    )
    assert sorted(d["Key"] for d in deleted["Deleted"]) == ["lineitem/seg.0000", "lineitem/seg.0001"], deleted
    assert s3.list_objects_v2(Bucket="boto-data").get("KeyCount") == 0
    s3.delete_bucket(Bucket="boto-data")
    expect_error("404", s3.head_bucket, Bucket="boto-data")
    print("boto3 client: all checks passed")


if __name__ == "__main__":
    main()
