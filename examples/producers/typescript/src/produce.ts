// A slotq producer in TypeScript: enqueue a job, wait for its end, handle
// a refusal.
//
//   npm ci && npm start -- QUEUE
//
// It invokes slotq's enqueue and admin functions with the AWS SDK's Lambda
// client, as any Node service can, and prints one JSON line per step:
//
//   {"step":"enqueued","job_id":…,"ticket":…,"slot_at":…,"position":…}
//   {"step":"ended","job_id":…,"status":"succeeded","attempt":1}
//   {"step":"refused","code":"invalid_queue","field":"queue"}
//
// Where it sends the calls:
//
//   SLOTQ_ENDPOINT_URL      an Invoke API such as `slotq local`'s
//                           (http://127.0.0.1:3001); unset: AWS, by the
//                           standard AWS variables (AWS_REGION, AWS_PROFILE, …)
//   SLOTQ_ENQUEUE_FUNCTION  the enqueue function's name (default EnqueueFunction:
//                           the local runtime's; on AWS, the stack's
//                           EnqueueFunctionName output)
//   SLOTQ_ADMIN_FUNCTION    the admin function's name (default AdminFunction)
//
// The requests and answers are described by the JSON Schemas in docs/schema/.

import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { InvokeCommand, LambdaClient, type LambdaClientConfig } from "@aws-sdk/client-lambda";

/** One job as a producer asks for it (docs/schema/enqueue-request.schema.json, Spec). */
export interface JobSpec {
  id?: string;
  kind?: string;
  target?: string;
  payload?: unknown;
  not_before?: string;
  key?: string;
}

/** One accepted job: its ticket, expected start and place in line. */
export interface Accepted {
  job_id: string;
  ticket: number;
  slot_at: string;
  position: number;
  status: string;
  key?: string;
  key_ahead?: number;
  existing?: boolean;
}

/** A job's record (docs/schema/job.schema.json), the fields used here. */
export interface Job {
  queue: string;
  job_id: string;
  status: "queued" | "parked" | "running" | "succeeded" | "failed" | "cancelled";
  attempt: number;
  last_error?: string;
}

/**
 * A request slotq refused, as it was: the same request gets the same
 * answer. code is stable and snake_case ("invalid_queue"), field the full
 * path of the value at fault ("queue", "job.not_before", "jobs[3].key").
 * Nothing was written.
 */
export class SlotqError extends Error {
  constructor(
    readonly code: string,
    readonly field: string,
    message: string,
  ) {
    super(`${code} at ${field || "the request"}: ${message}`);
    this.name = "SlotqError";
  }
}

/** The function failed (DynamoDB or SQS unavailable, a timeout): retrying may help. */
export class FunctionError extends Error {
  name = "FunctionError";
}

/** The enqueue and admin functions of one slotq stack. */
export class Slotq {
  private readonly client: LambdaClient;
  private readonly enqueueFn = process.env.SLOTQ_ENQUEUE_FUNCTION || "EnqueueFunction";
  private readonly adminFn = process.env.SLOTQ_ADMIN_FUNCTION || "AdminFunction";

  constructor() {
    const endpoint = process.env.SLOTQ_ENDPOINT_URL;
    const config: LambdaClientConfig = {};
    if (endpoint) {
      // A local runtime checks no credentials and serves any region.
      config.endpoint = endpoint;
      config.region = process.env.AWS_REGION || "us-east-1";
      config.credentials = { accessKeyId: "local", secretAccessKey: "local" };
    }
    this.client = new LambdaClient(config);
  }

  private async invoke(fn: string, request: object): Promise<any> {
    const res = await this.client.send(
      new InvokeCommand({ FunctionName: fn, Payload: new TextEncoder().encode(JSON.stringify(request)) }),
    );
    const body = new TextDecoder().decode(res.Payload);
    if (res.FunctionError) {
      throw new FunctionError(`${fn}: ${res.FunctionError}: ${body.slice(0, 500)}`);
    }
    const answer = JSON.parse(body);
    if (answer.error) {
      throw new SlotqError(answer.error.code, answer.error.field ?? "", answer.error.message);
    }
    return answer;
  }

  /** Enqueue one job; answer its ticket, slot_at, position and status. */
  async enqueue(queue: string, job: JobSpec): Promise<Accepted> {
    const answer = await this.invoke(this.enqueueFn, { queue, job });
    return answer.jobs[0];
  }

  /** The job's record: its status, attempts, history. */
  async get(queue: string, jobId: string): Promise<Job> {
    const answer = await this.invoke(this.adminFn, { op: "get", queue, job_id: jobId });
    return answer.job;
  }

  /** Poll get, with backoff, until the job has ended. */
  async wait(queue: string, jobId: string, timeoutMs = 120_000): Promise<Job> {
    const deadline = Date.now() + timeoutMs;
    let delay = 100;
    for (;;) {
      const job = await this.get(queue, jobId);
      if (job.status === "succeeded" || job.status === "failed" || job.status === "cancelled") {
        return job;
      }
      if (Date.now() + delay > deadline) {
        throw new Error(`job ${jobId} is still ${job.status} after ${timeoutMs}ms`);
      }
      await sleep(delay);
      delay = Math.min(delay * 2, 2000);
    }
  }
}

function step(fields: Record<string, unknown>): void {
  console.log(JSON.stringify(fields));
}

async function main(): Promise<void> {
  const queue = process.argv[2];
  if (!queue || process.argv.length !== 3) {
    console.error("usage: npm start -- QUEUE");
    process.exit(2);
  }
  const slotq = new Slotq();

  // The id makes the call idempotent: sent again (a timeout, a retry), it
  // answers the same job. The key runs the customer's jobs one at a time;
  // not_before holds the job back a second.
  const jobId = "produce-" + randomBytes(4).toString("hex");
  const accepted = await slotq.enqueue(queue, {
    id: jobId,
    kind: "echo",
    key: "customer-42",
    not_before: new Date(Date.now() + 1000).toISOString(),
    payload: { to: "ada@example.com", template: "receipt" },
  });
  step({
    step: "enqueued",
    job_id: accepted.job_id,
    ticket: accepted.ticket,
    slot_at: accepted.slot_at,
    position: accepted.position,
  });

  const job = await slotq.wait(queue, jobId);
  step({ step: "ended", job_id: job.job_id, status: job.status, attempt: job.attempt });

  // A refusal is an exception that names the code and the field at fault.
  try {
    await slotq.enqueue("not a queue!", { kind: "echo" });
  } catch (e) {
    if (!(e instanceof SlotqError)) throw e;
    step({ step: "refused", code: e.code, field: e.field });
  }
}

await main();
