package startlog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
)

// LogsAPI is the CloudWatch Logs call Logs makes.
type LogsAPI interface {
	FilterLogEvents(ctx context.Context, in *cloudwatchlogs.FilterLogEventsInput, opts ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.FilterLogEventsOutput, error)
}

// DefaultScan is how long Logs pages through the log group by default.
const DefaultScan = 20 * time.Second

// Logs reads a queue's starts from the worker's log group on a deployed
// stack: FilterLogEvents with a JSON filter pattern on the worker's
// "start" lines of the queue, from since on, page after page (the admin
// function needs logs:FilterLogEvents on the log group). The lines are
// the JSON the functions write with AWS_LAMBDA_LOG_FORMAT JSON
// (lambdacontext's handler names slog's message "message" and its time
// "timestamp"), and only at log level INFO or below.
type Logs struct {
	API LogsAPI
	// LogGroup is the worker's log group name.
	LogGroup string
	// Scan is how long it pages at most: FilterLogEvents scans the log
	// group's lines in the time range, and a page may hold none. After
	// it, Starts answers what it found, with more set, or an error if it
	// found nothing. Default DefaultScan.
	Scan time.Duration
	// Now is the clock of Scan. Default time.Now.
	Now func() time.Time
}

// FilterPattern is the filter pattern of queue's start lines. Queue
// names match [A-Za-z0-9_.-]{1,80} (slot.ValidateName; the admin
// function checks the queue exists first), so quoting the name is enough:
// it holds no quote, backslash or wildcard (*) to escape.
func FilterPattern(queue string) string {
	return fmt.Sprintf(`{ $.message = "start" && $.queue = "%s" }`, queue)
}

// parse reads a start of queue from a log event's message (ParseLine);
// ok is false for any other line. at is the event's timestamp, in case
// the line has none.
func parse(msg string, at time.Time, queue string) (Start, bool) {
	l, ok := ParseLine(msg)
	if !ok || l.Message != "start" || l.Queue != queue || l.Start.JobID == "" {
		return Start{}, false
	}
	if l.Start.StartedAt.IsZero() {
		l.Start.StartedAt = at
	}
	return l.Start, true
}

// Starts reads queue's starts from since on, by start time, at most
// limit; more says there are others after them (ask again from the last
// one's StartedAt).
func (l *Logs) Starts(ctx context.Context, queue string, since time.Time, limit int) ([]Start, bool, error) {
	now := time.Now
	if l.Now != nil {
		now = l.Now
	}
	scan := l.Scan
	if scan <= 0 {
		scan = DefaultScan
	}
	deadline := now().Add(scan)
	in := &cloudwatchlogs.FilterLogEventsInput{
		LogGroupName:  aws.String(l.LogGroup),
		FilterPattern: aws.String(FilterPattern(queue)),
		StartTime:     aws.Int64(since.UnixMilli()),
	}
	var found []Start
	// One more than limit, to know whether there are more.
	for len(found) <= limit {
		in.Limit = aws.Int32(int32(min(limit+1-len(found), 10000)))
		out, err := l.API.FilterLogEvents(ctx, in)
		if err != nil {
			return nil, false, fmt.Errorf("read starts of %s from %s: %w", queue, l.LogGroup, err)
		}
		for _, ev := range out.Events {
			s, ok := parse(aws.ToString(ev.Message), time.UnixMilli(aws.ToInt64(ev.Timestamp)), queue)
			// The event's timestamp, which StartTime filters on, is when
			// the line was written: just after the start.
			if ok && !s.StartedAt.Before(since) {
				found = append(found, s)
			}
		}
		if out.NextToken == nil || aws.ToString(out.NextToken) == aws.ToString(in.NextToken) {
			break
		}
		in.NextToken = out.NextToken
		if now().After(deadline) {
			if len(found) == 0 {
				return nil, false, fmt.Errorf("read starts of %s from %s: %w", queue, l.LogGroup, ErrScanTooLong)
			}
			sortStarts(found)
			return found, true, nil
		}
	}
	sortStarts(found)
	starts, more := page(found, limit)
	return starts, more, nil
}

// ErrScanTooLong is the error of a read that found no start within its
// Scan: the log group holds too many other lines in the time range.
var ErrScanTooLong = errors.New("no start found within the scan time: ask for a later since")
