package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/client"
)

// TestEndpointNeedsNoCredentials: on a machine with no AWS account (no
// ~/.aws, no AWS_* variables, no instance role), the README's client,
// config.LoadDefaultConfig then client.WithEndpoint, enqueues on the local
// runtime as the CLI does, with an unsigned request.
func TestEndpointNeedsNoCredentials(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	for _, v := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
		"AWS_DEFAULT_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_LAMBDA"} {
		t.Setenv(v, "")
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true") // no instance role, at once

	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		_, _ = w.Write([]byte(`{"queue":"emails","jobs":[{"job_id":"welcome-42","ticket":1,"position":0,"status":"queued"}]}`))
	}))
	defer srv.Close()

	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewFromConfig(cfg, client.WithEndpoint(srv.URL), func(o *client.Options) {
		o.LambdaOptions = append(o.LambdaOptions, func(lo *lambda.Options) { lo.RetryMaxAttempts = 1 })
	})
	out, err := c.Enqueue(ctx, &client.EnqueueInput{Queue: "emails", Job: &api.Spec{ID: "welcome-42", Kind: "echo"}})
	if err != nil {
		t.Fatalf("enqueue on the local endpoint without credentials: %v", err)
	}
	if len(out.Jobs) != 1 || out.Jobs[0].JobID != "welcome-42" {
		t.Errorf("answer %+v", out)
	}
	if strings.TrimSpace(auth) != "" {
		t.Errorf("request signed (Authorization %q): the local runtime needs no signature", auth)
	}
}
