package framework

import "testing"

// Clusters started one after the other in one process must not be handed
// the same port: the first may not have bound it yet.
func TestFreePortsNeverRepeats(t *testing.T) {
	seen := map[int]bool{}
	for range 200 {
		ports, err := FreePorts(3)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ports {
			if seen[p] {
				t.Fatalf("port %d handed out twice", p)
			}
			seen[p] = true
		}
	}
}
