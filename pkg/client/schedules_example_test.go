package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/client"
)

// Send the daily report at 8 in the morning, Paris time, through the
// queue's limit. Each occurrence becomes one job whose id names the
// schedule and the occurrence (api.OccurrenceID).
func ExampleClient_CreateSchedule() {
	endpoint, stop := runLocal()
	defer stop()
	c := client.NewFromConfig(aws.Config{}, client.WithEndpoint(endpoint))
	ctx := context.Background()
	if _, err := c.CreateQueue(ctx, &client.CreateQueueInput{Queue: "reports"}); err != nil {
		fmt.Println(err)
		return
	}
	out, err := c.CreateSchedule(ctx, &client.CreateScheduleInput{Queue: "reports", Name: "morning", Spec: api.ScheduleSpec{
		Cron: "0 8 * * *", TZ: "Europe/Paris",
		Job: api.ScheduleJob{Kind: "echo", Payload: json.RawMessage(`{"report":"daily"}`)},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	paris, _ := time.LoadLocation("Europe/Paris")
	fmt.Println(out.Schedule.Name, "next at", out.Schedule.Next.In(paris).Format("15:04"))

	_, err = c.CreateSchedule(ctx, &client.CreateScheduleInput{Queue: "reports", Name: "bad", Spec: api.ScheduleSpec{
		Cron: "0 8 * * *", TZ: "Europe/Atlantis", Job: api.ScheduleJob{Kind: "echo"},
	}})
	var e *client.Error
	if errors.As(err, &e) {
		fmt.Println(e.Code, e.Field)
	}
	_, err = c.GetSchedule(ctx, &client.ScheduleInput{Queue: "reports", Name: "bad"})
	fmt.Println(errors.Is(err, client.ErrScheduleNotFound))
	// Output:
	// morning next at 08:00
	// unknown_tz schedule.tz
	// true
}
