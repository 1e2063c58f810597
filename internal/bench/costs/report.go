package costs

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"gopkg.in/yaml.v3"

	"github.com/slotq/slotq/internal/local/samgen"
)

// get returns the value of key in a YAML mapping, or nil.
var get = samgen.Value

func jobItemKey(table, id string) *dynamodb.GetItemInput {
	return &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "J#q#" + id},
		"sk": &types.AttributeValueMemberS{Value: "job"},
	}}
}

// defaultMemory is assumed when the template gives no MemorySize.
const defaultMemory = 128

// functions maps the engine roles to the template's logical ids.
var functions = map[string]string{
	"enqueue": "EnqueueFunction", "worker": "WorkerFunction", "resume": "ResumeFunction", "admin": "AdminFunction",
}

// memory is each role's memory size in MB and where it came from.
type memory struct {
	mb     map[string]int
	source string
}

// memorySizes reads Globals.Function.MemorySize and each function's own
// MemorySize from the SAM template (as yaml.Nodes: the template's !Ref
// tags stay opaque).
func memorySizes(path string) memory {
	m := memory{mb: map[string]int{}, source: fmt.Sprintf("assumed %d MB (no MemorySize in %s)", defaultMemory, path)}
	for r := range functions {
		m.mb[r] = defaultMemory
	}
	b, err := os.ReadFile(path)
	if err != nil {
		m.source = fmt.Sprintf("assumed %d MB (%v)", defaultMemory, err)
		return m
	}
	var doc yaml.Node
	if yaml.Unmarshal(b, &doc) != nil || len(doc.Content) == 0 {
		return m
	}
	root := doc.Content[0]
	if g := get(get(get(root, "Globals"), "Function"), "MemorySize"); g != nil {
		if v, err := strconv.Atoi(g.Value); err == nil {
			for r := range functions {
				m.mb[r] = v
			}
			m.source = fmt.Sprintf("%s Globals.Function.MemorySize = %d MB", path, v)
		}
	}
	for r, id := range functions {
		if n := get(get(get(get(root, "Resources"), id), "Properties"), "MemorySize"); n != nil {
			if v, err := strconv.Atoi(n.Value); err == nil {
				m.mb[r] = v
				m.source += fmt.Sprintf("; %s %d MB", id, v)
			}
		}
	}
	return m
}

// templateSkew reads the default of the template's DefaultSkew parameter:
// the skew the stack gives queues, which decides how often a start comes
// early to the gate (a failed conditional write). 0 if the template does
// not say.
func templateSkew(path string) time.Duration {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	var doc yaml.Node
	if yaml.Unmarshal(b, &doc) != nil || len(doc.Content) == 0 {
		return 0
	}
	n := get(get(get(doc.Content[0], "Parameters"), "DefaultSkew"), "Default")
	if n == nil {
		return 0
	}
	d, err := time.ParseDuration(n.Value)
	if err != nil {
		return 0
	}
	return d
}

// templateAlarms counts the CloudWatch alarms of a stack deployed with
// the template's default parameters (an alarm under a Condition, such as
// LagAlarm's HasMetricsDimension, is left out) and the metrics they read,
// which CloudWatch bills: one for a plain alarm, each MetricStat of a
// metric math alarm.
func templateAlarms(path string) (alarms, metrics int) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0
	}
	var doc yaml.Node
	if yaml.Unmarshal(b, &doc) != nil || len(doc.Content) == 0 {
		return 0, 0
	}
	res := get(doc.Content[0], "Resources")
	for i := 0; res != nil && i+1 < len(res.Content); i += 2 {
		r := res.Content[i+1]
		if t := get(r, "Type"); t == nil || t.Value != "AWS::CloudWatch::Alarm" || get(r, "Condition") != nil {
			continue
		}
		alarms++
		math := get(get(r, "Properties"), "Metrics")
		if math == nil {
			metrics++
			continue
		}
		for _, m := range math.Content {
			if get(m, "MetricStat") != nil {
				metrics++
			}
		}
	}
	return alarms, metrics
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

func report(w io.Writer, mem memory, skew time.Duration, rs []result, f fixed, tp throughput, tmpl string) {
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

	fmt.Fprintln(w, "### Fixed cost, paid with or without jobs")
	fmt.Fprintln(w)
	gbs := f.busy.Seconds() * float64(mem.mb["resume"]) / 1024
	perRun := f.bill.WriteUnits*prices.DynamoWriteMillion/1e6 + f.bill.ReadUnits*prices.DynamoReadMillion/1e6 +
		prices.LambdaMillion/1e6 + gbs*prices.LambdaGBSecond
	const polls = 5 * 3 * runsPerMonth // 5 idle pollers, one 20 s long poll each, per minute
	fmt.Fprintln(w, "| item | per run | per month |")
	fmt.Fprintln(w, "|---|--:|--:|")
	fmt.Fprintf(w, "| resume function, once a minute (%d runs/month), one queue, nothing to do: %.1f RRU, %d DynamoDB calls, %.0f ms | $%.8f | $%.2f |\n",
		runsPerMonth, f.bill.ReadUnits, f.bill.Calls, float64(f.busy.Microseconds())/1000, perRun, perRun*runsPerMonth)
	fmt.Fprintf(w, "| SQS event source idle long polls (assumed 5 pollers × 3 polls/min = %d requests/month) | | $%.2f |\n",
		polls, float64(polls)*prices.SQSMillion/1e6)
	alarms, alarmMetrics := templateAlarms(tmpl)
	fmt.Fprintf(w, "| CloudWatch alarms: %d, reading %d metrics (metric math alarms count each metric) | | $%.2f |\n",
		alarms, alarmMetrics, float64(alarmMetrics)*prices.AlarmMetricMonth)
	fmt.Fprintf(w, "| CloudWatch dashboard (an account's first three are free) | | $%.2f |\n", prices.DashboardMonth)
	fmt.Fprintln(w)

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
