package action

import "testing"

// TestJoinWithin checks that joinWithin always says what join says, whether or not the
// answer can be taken from the whole path.
func TestJoinWithin(t *testing.T) {
	tests := []struct{ whole, dir, name string }{
		{"/a/b/c", "/a", "b"},
		{"/a/b/c", "/", "a"},
		{"/a/b/c", "/a/b", "c"},
		{"/a/b", "/a/b", "c"},
		{"/a/bc", "/a", "b"},
		{"/a/b", "/x", "b"},
		{"/ab/c", "/a", "b"},
		{"/a//b", "/a", "b"},
		{"", "/", "a"},
		{"/", "/", "a"},
		{"/a", "/a/b", "c"},
	}
	for _, tt := range tests {
		if got, want := joinWithin(tt.whole, tt.dir, tt.name), join(tt.dir, tt.name); got != want {
			t.Errorf("joinWithin(%q, %q, %q) = %q, want %q", tt.whole, tt.dir, tt.name, got, want)
		}
	}
}
