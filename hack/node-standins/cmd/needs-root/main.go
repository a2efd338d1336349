// Command needs-root stands in for a session program made to run as root with a writable root
// filesystem, which a session pod of the restricted level never is: it says what it lacks and
// exits, and only where it has both does it stay up.
package main

import (
	"fmt"
	"os"
)

func main() {
	failed := false
	if uid := os.Geteuid(); uid != 0 {
		fmt.Fprintf(os.Stderr, "needs-root: runs as user %d, not root\n", uid)
		failed = true
	}
	if err := os.WriteFile("/needs-root-probe", []byte("x"), 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "needs-root: cannot write its root filesystem: %v\n", err)
		failed = true
	}
	if failed {
		os.Exit(1)
	}
	select {}
}
