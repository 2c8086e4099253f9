package apiclient_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/splashfabric/splashfabric/apiclient"
	"github.com/splashfabric/splashfabric/apiclient/apitest"
	"github.com/splashfabric/splashfabric/internal/testwait"
)

func TestSessionsSourceToolsAndWorkers(t *testing.T) {
	c, _ := newClient(t, "")
	ctx := context.Background()
	done, err := c.Submit(ctx, apiclient.SubmitRequest{Source: `return await tool.start("demo.upper", "hi")`})
	if err != nil {
		t.Fatal(err)
	}
	waiting, err := c.Submit(ctx, apiclient.SubmitRequest{Source: `await tool.start("demo.sleep", "forever")`})
	if err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 0, "the upper session completed", func() bool {
		s, err := c.Session(ctx, done.ID)
		return err == nil && s.State == apiclient.StateCompleted
	})
	for _, tt := range []struct {
		state string
		want  []string
	}{
		{"", []string{waiting.ID, done.ID}},
		{apiclient.StateSuspended, []string{waiting.ID}},
		{apiclient.StateCompleted, []string{done.ID}},
	} {
		list, err := c.Sessions(ctx, tt.state, 0)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range list {
			got = append(got, s.ID)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("Sessions(%q) = %v, want %v", tt.state, got, tt.want)
		}
	}
	if list, err := c.Sessions(ctx, "", 1); err != nil || len(list) != 1 || list[0].ID != waiting.ID {
		t.Errorf("Sessions(limit 1) = %+v, %v", list, err)
	}
	if _, err := c.Sessions(ctx, "running", 0); !errors.Is(err, apiclient.ErrBadRequest) {
		t.Errorf("Sessions(running): %v, want ErrBadRequest", err)
	}
	src, err := c.Source(ctx, done.ID)
	if err != nil || src.Source != `return await tool.start("demo.upper", "hi")` {
		t.Errorf("Source = %+v, %v", src, err)
	}

	tools, err := c.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var upper *apiclient.Tool
	for i := range tools {
		if tools[i].Name == "demo.upper" {
			upper = &tools[i]
		}
	}
	if upper == nil || len(upper.Workers) != 1 || upper.Workers[0].ID != apitest.WorkerID || upper.Workers[0].Answered != 1 {
		t.Fatalf("demo.upper = %+v", upper)
	}
	workers, err := c.Workers(ctx)
	if err != nil || len(workers) != 1 || !slices.Contains(workers[0].Tools, "demo.upper") {
		t.Fatalf("Workers = %+v, %v", workers, err)
	}
}
