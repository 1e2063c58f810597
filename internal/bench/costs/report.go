package costs

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func jobItemKey(table, id string) *dynamodb.GetItemInput {
	return &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "J#q#" + id},
		"sk": &types.AttributeValueMemberS{Value: "job"},
	}}
}

// perJob is one scenario's cost per job.
type perJob struct {
	wru, rru, idx, failedW, listR float64
	sends, receives, deletes      float64
	invEnq, invWorker, invAdmin   float64
	secs, wait, gbs               float64
}

func (r result) perJob(mem memory, f fixed) perJob {
	n := float64(r.n)
	// The resume runs here are the schedule's regular runs: their
	// invocation and empty-run cost are the fixed cost; only what they
	// did beyond it is the jobs'.
	runs := float64(r.inv["resume"])
	bill := r.bill
	bill.ReadUnits -= runs * f.bill.ReadUnits
	bill.WriteUnits -= runs * f.bill.WriteUnits
	// At least 0: a scenario's runs may come in faster than the empty
	// runs measured apart (a short scenario, a quieter moment).
	resumeBusy := max(0, r.busy["resume"]-time.Duration(runs)*f.busy)
	p := perJob{
		wru: bill.WriteUnits / n, rru: bill.ReadUnits/n + r.listReads, idx: bill.IndexWrites / n,
		failedW: bill.FailedWrites / n, listR: r.listReads,
		sends: float64(r.sends) / n, receives: float64(r.receives) / n, deletes: float64(r.deletes) / n,
		invEnq: float64(r.inv["enqueue"]) / n, invWorker: float64(r.inv["worker"]) / n, invAdmin: float64(r.inv["admin"]) / n,
		wait: r.wait.Seconds() / n,
	}
	for role, d := range r.busy {
		if role == "resume" {
			d = resumeBusy
		}
		s := d.Seconds() / n
		p.secs += s
		p.gbs += s * float64(mem.mb[role]) / 1024
	}
	return p
}

type dollars struct{ ddb, sqs, lreq, ldur float64 }

func (d dollars) total() float64 { return d.ddb + d.sqs + d.lreq + d.ldur }

// perMillion prices a job's units for a million jobs.
func (p perJob) perMillion() dollars {
	return dollars{
		ddb:  p.wru*prices.DynamoWriteMillion + p.rru*prices.DynamoReadMillion,
		sqs:  (p.sends + p.receives + p.deletes) * prices.SQSMillion,
		lreq: (p.invEnq + p.invWorker + p.invAdmin) * prices.LambdaMillion,
		ldur: p.gbs * 1e6 * prices.LambdaGBSecond,
	}
}

// earlySleep is the modeled mean time a worker sleeps on AWS because its
// message came early (see report).
const earlySleep = 500 * time.Millisecond

const runsPerMonth = 43800 // once a minute: 60 × 24 × 365 / 12

// report writes the tables; idle are the resume runs of idle tables,
// the first of one queue, whose runs the scenarios' jobs are charged
// less.
func report(w io.Writer, mem memory, skew time.Duration, rs []result, idle []fixed, tp throughput, tmpl string) {
	f := idle[0]
	fmt.Fprintf(w, "Prices: %s; %s.\n", prices.Date, prices.Source)
	fmt.Fprintf(w, "Lambda memory: %s. Lambda time is wall time measured on DynamoDB Local and moto on loopback, not on AWS.\n", mem.source)
	fmt.Fprintf(w, "Queue skew: %v (the template's DefaultSkew).\n\n", skew)

	fmt.Fprintln(w, "### Units per job")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| scenario | jobs | DynamoDB WRU (index; failed cond.) | DynamoDB RRU (resume listing) | SQS requests: send + receive + delete | Lambda invocations: enqueue + worker + admin | Lambda s (slot wait) | GB-s | worst start lateness |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|--:|--:|")
	var costs []dollars
	for _, r := range rs {
		p := r.perJob(mem, f)
		costs = append(costs, p.perMillion())
		fmt.Fprintf(w, "| (%s) %s | %d | %.2f (%.2f; %.2f) | %.2f (%.2f) | %.2f + %.2f + %.2f = %.2f | %.2f + %.2f + %.2f = %.2f | %.3f (%.3f) | %.5f | %v |\n",
			r.sc.name, r.sc.what, r.n, p.wru, p.idx, p.failedW, p.rru, p.listR,
			p.sends, p.receives, p.deletes, p.sends+p.receives+p.deletes,
			p.invEnq, p.invWorker, p.invAdmin, p.invEnq+p.invWorker+p.invAdmin,
			p.secs, p.wait, p.gbs, r.lateness.Round(time.Millisecond))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "### Cost per million jobs (USD, us-east-1 on-demand)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| scenario | DynamoDB | SQS | Lambda requests | Lambda duration | total | + worker sleep on AWS (modeled) | total on AWS |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|--:|")
	for i, r := range rs {
		c := costs[i]
		sleep := r.perJob(mem, f).invWorker * earlySleep.Seconds() * float64(mem.mb["worker"]) / 1024 * 1e6 * prices.LambdaGBSecond
		fmt.Fprintf(w, "| (%s) %s | %.2f | %.2f | %.2f | %.2f | **%.2f** | %.2f | **%.2f** |\n",
			r.sc.name, r.sc.what, c.ddb, c.sqs, c.lreq, c.ldur, c.total(), sleep, c.total()+sleep)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Worker sleep on AWS: SQS delays are whole seconds, so a message for a slot with a sub-second part arrives up to a second early "+
		"and the worker sleeps the rest; modeled as %v per worker invocation (the mean of a uniform fraction) at the worker's %d MB. "+
		"moto delivers slightly late instead, so the measured duration leaves it out.\n\n", earlySleep, mem.mb["worker"])

	fixedCost(w, mem, idle, tmpl)

	fmt.Fprintln(w, "### Published prices of the alternatives (per million)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| service | price | per | note |")
	fmt.Fprintln(w, "|---|--:|---|---|")
	for _, a := range alternatives {
		fmt.Fprintf(w, "| %s | $%.2f | %s | %s |\n", a.Name, a.PerMillion, a.Unit, a.Note)
	}
	fmt.Fprintln(w)

	fmt.Fprintln(w, "### Enqueue throughput on DynamoDB Local and moto (loopback, median)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| call | jobs/s (median) | runs |")
	fmt.Fprintln(w, "|---|--:|---|")
	fmt.Fprintf(w, "| single job per call (40 calls in a row) | %.0f | %s |\n", median(tp.single), runsOf(tp.single))
	fmt.Fprintf(w, "| batch of 100 per call | %.0f | %s |\n", median(tp.batch), runsOf(tp.batch))
}

// The template's parameters that pick the CloudWatch resources, and the
// values a production stack gives them.
var (
	allAlarms = map[string]string{"Alarms": "all"}
	dashboard = map[string]string{"Dashboard": "true"}
	perQueue  = map[string]string{"Alarms": "all", "MetricsDimension": "Queue"}
)

// fixedCost writes what a stack costs a month with no job: the resume
// function's runs on idle tables of each size measured, its schedule, the
// event source's idle polls and CloudWatch's alarms and dashboard, for the
// stack the template makes with its defaults and with what a production
// stack adds.
func fixedCost(w io.Writer, mem memory, idle []fixed, tmpl string) {
	fmt.Fprintln(w, "### Fixed cost, paid with or without jobs")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| item | per run | per month |")
	fmt.Fprintln(w, "|---|--:|--:|")
	resume := 0.0
	for _, f := range idle {
		gbs := f.busy.Seconds() * float64(mem.mb["resume"]) / 1024
		perRun := f.bill.WriteUnits*prices.DynamoWriteMillion/1e6 + f.bill.ReadUnits*prices.DynamoReadMillion/1e6 +
			prices.LambdaMillion/1e6 + gbs*prices.LambdaGBSecond
		resume = max(resume, perRun*runsPerMonth)
		fmt.Fprintf(w, "| resume function, once a minute (%d runs/month), %d idle %s: %.1f RRU, %.1f WRU, %d DynamoDB calls, %.0f ms | $%.8f | $%.2f |\n",
			runsPerMonth, f.queues, plural(f.queues, "queue", "queues"), f.bill.ReadUnits, f.bill.WriteUnits, f.bill.Calls,
			float64(f.busy.Microseconds())/1000, perRun, perRun*runsPerMonth)
	}
	schedule := runsPerMonth * prices.SchedulerMillion / 1e6
	fmt.Fprintf(w, "| EventBridge Scheduler, the resume function's schedule (%d invocations/month) | | $%.2f |\n", runsPerMonth, schedule)
	const polls = 5 * 3 * runsPerMonth // 5 idle pollers, one 20 s long poll each, per minute
	fmt.Fprintf(w, "| SQS event source idle long polls (assumed 5 pollers × 3 polls/min = %d requests/month) | | $%.2f |\n",
		polls, float64(polls)*prices.SQSMillion/1e6)
	def, err := templateCloudWatch(tmpl, nil)
	if err != nil {
		fmt.Fprintf(w, "| CloudWatch alarms and dashboard: cannot read the template (%v) | | |\n", err)
		fmt.Fprintln(w)
		return
	}
	fmt.Fprintf(w, "| CloudWatch alarms, the template's default `Alarms`: %d, reading %d %s (metric math alarms count each metric) | | $%.2f |\n",
		def.alarms, def.metrics, plural(def.metrics, "metric", "metrics"), float64(def.metrics)*prices.AlarmMetricMonth)
	fmt.Fprintf(w, "| CloudWatch dashboards, the template's default `Dashboard`: %d | | $%.2f |\n",
		def.dashboards, float64(def.dashboards)*prices.DashboardMonth)
	base := resume + schedule + float64(polls)*prices.SQSMillion/1e6
	fmt.Fprintf(w, "| **total, the stack with the template's defaults** (the costlier resume run) | | **$%.2f** |\n", base+def.month())
	all, err1 := templateCloudWatch(tmpl, allAlarms)
	lag, err2 := templateCloudWatch(tmpl, perQueue)
	dash, err3 := templateCloudWatch(tmpl, dashboard)
	if err := errors.Join(err1, err2, err3); err != nil {
		fmt.Fprintf(w, "| with `Alarms=all`, `Dashboard=true`: cannot evaluate the template (%v) | | |\n", err)
		fmt.Fprintln(w)
		return
	}
	fmt.Fprintf(w, "| CloudWatch alarms with `Alarms=all` instead: %d reading %d metrics (with `MetricsDimension` set too: %d reading %d, $%.2f) | | $%.2f |\n",
		all.alarms, all.metrics, lag.alarms, lag.metrics, float64(lag.metrics)*prices.AlarmMetricMonth, float64(all.metrics)*prices.AlarmMetricMonth)
	fmt.Fprintf(w, "| CloudWatch dashboards with `Dashboard=true` instead: %d (an account's first three are free) | | $%.2f |\n",
		dash.dashboards, float64(dash.dashboards)*prices.DashboardMonth)
	fmt.Fprintf(w, "| **total with `Alarms=all Dashboard=true`**, what a production stack picks | | **$%.2f** |\n",
		base+float64(all.metrics)*prices.AlarmMetricMonth+float64(dash.dashboards)*prices.DashboardMonth)
	fmt.Fprintln(w)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func runsOf(xs []float64) string {
	s := ""
	for i, x := range xs {
		if i > 0 {
			s += ", "
		}
		s += strconv.FormatFloat(x, 'f', 0, 64)
	}
	return s
}
