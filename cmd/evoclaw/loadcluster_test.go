package main

import (
	"errors"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/evoclaw/evoclaw/edge/testenv"
)

func TestParseClusterSizes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int // nil: a usage error
	}{
		{"1,2,3", []int{1, 2, 3}},
		{" 2 , 1", []int{2, 1}},
		{"3", []int{3}},
		{"", nil},
		{"0", nil},
		{"9", nil},
		{"1,1", nil},
		{"1,x", nil},
	} {
		got, err := parseClusterSizes(tc.in)
		if tc.want == nil {
			if !errors.Is(err, errUsage) {
				t.Errorf("parseClusterSizes(%q) = %v, %v; want a usage error", tc.in, got, err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("parseClusterSizes(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// clusterRow is a line of the table `evoclaw load --cluster` prints:
// nodes, conversations/s, ..., forwarded, failed.
var clusterRow = regexp.MustCompile(`(?m)^\s+(\d+)\s+(\d+)\s+\S+\s+\S+\s+\S+\s+(\d+)\s+(\d+)\s+`)

// TestLoadCluster runs `evoclaw load --cluster 1,2` against a real etcd:
// every conversation answers with one node and with two, and with two
// some are forwarded to the node owning them.
func TestLoadCluster(t *testing.T) {
	testenv.Find(t, "etcd", "etcd-server")
	code, out, errOut := runBinary(t, "", "load", "--agents", "3", "--conversations", "24", "--cluster", "1,2")
	if code != 0 {
		t.Fatalf("exit %d:\n%s\n%s", code, out, errOut)
	}
	rows := clusterRow.FindAllStringSubmatch(out, -1)
	if len(rows) != 2 {
		t.Fatalf("want a row per cluster size:\n%s", out)
	}
	for _, r := range rows {
		nodes, _ := strconv.Atoi(r[1])
		perSec, _ := strconv.Atoi(r[2])
		forwarded, _ := strconv.Atoi(r[3])
		failed, _ := strconv.Atoi(r[4])
		if perSec <= 0 || failed != 0 || (nodes == 1) != (forwarded == 0) {
			t.Errorf("%d node(s): %d conversations/s, %d forwarded, %d failed:\n%s", nodes, perSec, forwarded, failed, out)
		}
	}
}
