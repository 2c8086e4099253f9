package clip_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/splashfabric/splashfabric/internal/clip"
)

func TestClip(t *testing.T) {
	tests := []struct {
		name, in string
		n        int
		want     string
		quoted   string
	}{
		{"short", "abc", 4, "abc", `"abc"`},
		{"exact", "abcd", 4, "abcd", `"abcd"`},
		{"long", "abcdef", 4, "abcd…(6 bytes)", `"abcd"…(6 bytes)`},
		{"empty", "", 0, "", `""`},
		{"nothing kept", "ab", 0, "…(2 bytes)", `""…(2 bytes)`},
		{"between runes", "aé€x", 3, "aé…(7 bytes)", `"aé"…(7 bytes)`},
		{"inside a rune", "a€€", 2, "a…(7 bytes)", `"a"…(7 bytes)`},
		{"the first rune cut", "é", 1, "…(2 bytes)", `""…(2 bytes)`},
		{"not utf-8", "\xff\xff\xff\xff\xff\xff\xff", 5, "\xff\xff\xff\xff\xff…(7 bytes)", `"\xff\xff\xff\xff\xff"…(7 bytes)`},
		{"quotes", `a"b"c`, 3, `a"b…(5 bytes)`, `"a\"b"…(5 bytes)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := clip.String(tt.in, tt.n); got != tt.want {
				t.Errorf("String = %q, want %q", got, tt.want)
			}
			if got := clip.Bytes([]byte(tt.in), tt.n); got != tt.want {
				t.Errorf("Bytes = %q, want %q", got, tt.want)
			}
			if got := clip.Quote(tt.in, tt.n); got != tt.quoted {
				t.Errorf("Quote = %s, want %s", got, tt.quoted)
			}
			if got := clip.QuoteBytes([]byte(tt.in), tt.n); got != tt.quoted {
				t.Errorf("QuoteBytes = %s, want %s", got, tt.quoted)
			}
		})
	}
}

// A clipped UTF-8 value stays UTF-8 and never repeats more than it may,
// whatever its length and wherever its runes fall.
func FuzzString(f *testing.F) {
	f.Add(strings.Repeat("€", 40), 64)
	f.Add("abc", 1)
	f.Fuzz(func(t *testing.T, s string, n int) {
		if n < 0 || n > 1<<10 {
			t.Skip()
		}
		got := clip.String(s, n)
		kept, _, cut := strings.Cut(got, "…(")
		if !cut {
			kept = got
		}
		if len(kept) > n && cut {
			t.Fatalf("kept %d bytes of %d, limit %d", len(kept), len(s), n)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("clipping valid UTF-8 gave %q", got)
		}
		if !strings.HasPrefix(s, kept) {
			t.Fatalf("%q is not a prefix of the value", kept)
		}
	})
}

func ExampleQuote() {
	id := strings.Repeat("x", 100)
	fmt.Println(clip.Quote(id, 8))
	// Output: "xxxxxxxx"…(100 bytes)
}
