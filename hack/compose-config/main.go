// compose-config loads a Compose file with compose-go, the library Docker Compose v2 loads files
// with, and prints the project as Docker Compose would run it (JSON), or the error Docker
// Compose would give. The tests use it to check that compose.yaml works unchanged with Docker
// Compose, which cannot run here.
//
//	compose-config FILE ENV_FILE
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: compose-config FILE ENV_FILE")
		os.Exit(2)
	}
	options, err := cli.NewProjectOptions(
		[]string{os.Args[1]},
		cli.WithEnvFiles(os.Args[2]),
		cli.WithDotEnv,
	)
	if err == nil {
		var project *types.Project
		if project, err = options.LoadProject(context.Background()); err == nil {
			var out []byte
			if out, err = project.MarshalJSON(); err == nil {
				fmt.Println(string(out))
				return
			}
		}
	}
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
