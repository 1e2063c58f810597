package dispatch

import (
	"net/netip"
	"testing"

	"github.com/slotq/slotq/internal/slot"
)

// The enqueue check (slot.Config.CheckTarget) and the worker's dial-time
// check (dialCheck) judge every address the same way, whatever form the
// dialer hands it in: a target accepted at enqueue is one the worker
// dials, and one refused at enqueue is never dialled.
func TestEnqueueAndDialChecksAgree(t *testing.T) {
	addrs := []string{
		"127.0.0.1", "::ffff:127.0.0.1", "::127.0.0.1", "::1", "::", "0.0.0.0",
		"169.254.169.254", "::ffff:169.254.169.254", "::169.254.169.254", "64:ff9b::a9fe:a9fe", "2002:a9fe:a9fe::",
		"fd00:ec2::254", "10.1.2.3", "::ffff:10.1.2.3", "::a01:203", "fe80::1", "fd12::1",
		"2001:0:4136:e378:8000:63bf:80ff:fffe", "93.184.215.14", "::ffff:93.184.215.14", "2606:2800:21f:cb07::1",
	}
	allows := [][]string{nil, {"::/0"}, {"0.0.0.0/0"}, {"127.0.0.1/32"}, {"10.0.0.0/8", "::1/128"}, {"169.254.0.0/16"}, {"fd00::/8"}}
	for _, nets := range allows {
		cfg := slot.Config{Targets: []string{"http://*:*"}, AllowNetworks: nets}
		check := dialCheck(cfg)
		for _, s := range addrs {
			a := netip.MustParseAddr(s)
			enq := cfg.CheckTarget("http://" + netip.AddrPortFrom(a, 8080).String() + "/")
			// The dialer may hand over an IPv4-mapped address in its
			// IPv4 form; both forms must get the enqueue check's answer.
			for _, d := range []netip.Addr{a, a.Unmap()} {
				dial := check("tcp", netip.AddrPortFrom(d, 8080).String(), nil)
				if (enq == nil) != (dial == nil) {
					t.Errorf("allow_networks %v, %s: enqueue check %v, dial check of %s %v", nets, s, enq, d, dial)
				}
			}
		}
	}
}
