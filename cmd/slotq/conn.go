package main

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/slotq/slotq/internal/cli/clikit"
)

// connFlags registers the connection flags on fs (clikit.ConnFlags);
// --stack reads the stack's outputs with newCloudFormation.
func connFlags(fs *pflag.FlagSet) *clikit.Conn {
	cn := clikit.ConnFlags(fs)
	cn.CloudFormation = func(cfg aws.Config) clikit.DescribeStacksAPI { return newCloudFormation(cfg) }
	return cn
}

// stackFlags gives cmd the connection flags: cn, those its parent holds
// for every subcommand, or else its own.
func stackFlags(cmd *cobra.Command, cn *clikit.Conn) *clikit.Conn {
	if cn == nil {
		cn = connFlags(cmd.Flags())
	}
	return cn
}

// newCloudFormation builds the CloudFormation client --stack uses; tests
// replace it.
var newCloudFormation = func(cfg aws.Config) clikit.DescribeStacksAPI { return cloudformation.NewFromConfig(cfg) }
