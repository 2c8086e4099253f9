package main

import (
	"slices"
	"testing"
)

func TestRepeatedKeys(t *testing.T) {
	tests := []struct {
		line string
		want []string
	}{
		{`{"a":1,"b":2}`, nil},
		{`{"tool":"x","tool":"x"}`, []string{"tool"}},
		{`{"g":{"k":1,"k":2},"k":3}`, []string{"k"}},
		{`{"a":[{"k":1,"k":1}],"b":{"c":[1,2]}}`, []string{"k"}},
		{`not json`, nil},
		{``, nil},
	}
	for _, tt := range tests {
		if got := repeatedKeys([]byte(tt.line)); !slices.Equal(got, tt.want) {
			t.Errorf("repeatedKeys(%s) = %q, want %q", tt.line, got, tt.want)
		}
	}
}
