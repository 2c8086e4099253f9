package toolspec_test

import (
	"testing"

	"github.com/splashfabric/splashfabric/toolspec"
)

func TestRedactor(t *testing.T) {
	tool, err := toolspec.Spec{Name: "a", Redact: []toolspec.RedactRule{
		{Literal: "hunter2", Replace: "[pw]"},
		{Regexp: `sk-[a-z0-9]{4,}`, Replace: "$0[key]"},
		{Regexp: `\[pw\]\[pw\]`, Replace: "[pws]"},
	}}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	redact := tool.Redactor()
	tests := []struct{ in, want string }{
		{"nothing to hide", "nothing to hide"},
		{"pw hunter2 and hunter2", "pw [pw] and [pw]"},
		{"key sk-abcd1234 end", "key $0[key] end"},     // replacement is literal
		{"hunter2hunter2", "[pws]"},                    // rules apply in order
		{"sk-abc is too short", "sk-abc is too short"}, // no match
		{"", ""},
	}
	for _, tt := range tests {
		if got := redact(tt.in); got != tt.want {
			t.Errorf("redact(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func TestRedactorNilWithoutRules(t *testing.T) {
	tool, err := toolspec.Spec{Name: "a"}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	if tool.Redactor() != nil {
		t.Fatal("a tool without rules has a redactor")
	}
}
