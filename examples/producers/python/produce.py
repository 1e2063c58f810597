#!/usr/bin/env python3
"""A slotq producer in Python: enqueue a job, wait for its end, handle a refusal.

    python3 produce.py QUEUE

It invokes slotq's enqueue and admin functions with boto3, as any Python
service can, and prints one JSON line per step:

    {"step": "enqueued", "job_id": ..., "ticket": ..., "slot_at": ..., "position": ...}
    {"step": "ended", "job_id": ..., "status": "succeeded", "attempt": 1}
    {"step": "refused", "code": "invalid_queue", "field": "queue"}

Where it sends the calls:

    SLOTQ_ENDPOINT_URL      an Invoke API such as `slotq local`'s
                            (http://127.0.0.1:3001); unset: AWS, by the
                            standard AWS variables (AWS_REGION, AWS_PROFILE, ...)
    SLOTQ_ENQUEUE_FUNCTION  the enqueue function's name (default EnqueueFunction:
                            the local runtime's; on AWS, the stack's
                            EnqueueFunctionName output)
    SLOTQ_ADMIN_FUNCTION    the admin function's name (default AdminFunction)

The requests and answers are described by the JSON Schemas in docs/schema/.
"""

import json
import os
import sys
import time
import uuid
from datetime import datetime, timedelta, timezone

import boto3
from botocore.config import Config


class SlotqError(Exception):
    """A request slotq refused, as it was: the same request gets the same answer.

    code is stable and snake_case ("invalid_queue", "queue_not_found"), field the
    full path of the value at fault ("queue", "job.not_before", "jobs[3].key").
    Nothing was written.
    """

    def __init__(self, code, field, message):
        super().__init__(f"{code} at {field or 'the request'}: {message}")
        self.code, self.field, self.message = code, field, message


class FunctionError(Exception):
    """The function failed (DynamoDB or SQS unavailable, a timeout): retrying may help."""


class Slotq:
    """The enqueue and admin functions of one slotq stack."""

    def __init__(self):
        endpoint = os.environ.get("SLOTQ_ENDPOINT_URL")
        options = {"config": Config(retries={"mode": "standard"})}
        if endpoint:
            # A local runtime checks no credentials and serves any region.
            options.update(
                endpoint_url=endpoint,
                region_name=os.environ.get("AWS_REGION", "us-east-1"),
                aws_access_key_id="local",
                aws_secret_access_key="local",
            )
        self.client = boto3.client("lambda", **options)
        self.enqueue_fn = os.environ.get("SLOTQ_ENQUEUE_FUNCTION", "EnqueueFunction")
        self.admin_fn = os.environ.get("SLOTQ_ADMIN_FUNCTION", "AdminFunction")

    def _invoke(self, function, request):
        res = self.client.invoke(FunctionName=function, Payload=json.dumps(request).encode())
        body = res["Payload"].read()
        if res.get("FunctionError"):
            raise FunctionError(f"{function}: {res['FunctionError']}: {body[:500]!r}")
        answer = json.loads(body)
        error = answer.get("error")
        if error:
            raise SlotqError(error["code"], error.get("field", ""), error["message"])
        return answer

    def enqueue(self, queue, job):
        """Enqueue one job; answer its ticket, slot_at, position and status."""
        return self._invoke(self.enqueue_fn, {"queue": queue, "job": job})["jobs"][0]

    def get(self, queue, job_id):
        """The job's record: its status, attempts, history."""
        return self._invoke(self.admin_fn, {"op": "get", "queue": queue, "job_id": job_id})["job"]

    def wait(self, queue, job_id, timeout=120.0):
        """Poll get, with backoff, until the job has ended."""
        deadline = time.monotonic() + timeout
        delay = 0.1
        while True:
            job = self.get(queue, job_id)
            if job["status"] in ("succeeded", "failed", "cancelled"):
                return job
            if time.monotonic() + delay > deadline:
                raise TimeoutError(f"job {job_id} is still {job['status']} after {timeout}s")
            time.sleep(delay)
            delay = min(delay * 2, 2.0)


def step(**fields):
    print(json.dumps(fields, separators=(",", ":")), flush=True)


def rfc3339(t):
    return t.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: produce.py QUEUE")
    queue = sys.argv[1]
    slotq = Slotq()

    # The id makes the call idempotent: sent again (a timeout, a retry),
    # it answers the same job. The key runs the customer's jobs one at a
    # time; not_before holds the job back a second.
    job_id = "produce-" + uuid.uuid4().hex[:8]
    accepted = slotq.enqueue(queue, {
        "id": job_id,
        "kind": "echo",
        "key": "customer-42",
        "not_before": rfc3339(datetime.now(timezone.utc) + timedelta(seconds=1)),
        "payload": {"to": "ada@example.com", "template": "receipt"},
    })
    step(step="enqueued", job_id=accepted["job_id"], ticket=accepted["ticket"],
         slot_at=accepted["slot_at"], position=accepted["position"])

    job = slotq.wait(queue, job_id)
    step(step="ended", job_id=job["job_id"], status=job["status"], attempt=job["attempt"])

    # A refusal is an exception that names the code and the field at fault.
    try:
        slotq.enqueue("not a queue!", {"kind": "echo"})
    except SlotqError as e:
        step(step="refused", code=e.code, field=e.field)


if __name__ == "__main__":
    main()
