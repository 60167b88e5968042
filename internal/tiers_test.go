package internal_test

import (
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/sluicefeed/sluice/"

// tier names the tier of an internal package ("lib", "app", "testkit"), or
// "" for a package outside internal/.
func tier(pkg string) string {
	rest, ok := strings.CutPrefix(pkg, module+"internal/")
	if !ok {
		return ""
	}
	t, _, _ := strings.Cut(rest, "/")
	return t
}

// TestTiers checks the layering of internal/ that README.md states: every
// internal package sits in one of the three tiers; libraries import neither
// the application nor test scaffolding; only tests import test scaffolding.
func TestTiers(t *testing.T) {
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports,TestImports,XTestImports", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	seen := 0
	for {
		var p struct {
			ImportPath                         string
			Imports, TestImports, XTestImports []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		seen++
		from := tier(p.ImportPath)
		if strings.HasPrefix(p.ImportPath, module+"internal/") {
			switch from {
			case "lib", "app", "testkit":
			default:
				t.Errorf("%s is in no tier of internal/ (lib, app, testkit)", p.ImportPath)
			}
		}
		for _, imp := range p.Imports {
			switch to := tier(imp); {
			case to == "testkit" && from != "testkit":
				t.Errorf("%s imports test scaffolding %s outside its tests", p.ImportPath, imp)
			case to == "app" && from == "lib":
				t.Errorf("library %s imports the application package %s", p.ImportPath, imp)
			}
		}
		for _, imp := range append(p.TestImports, p.XTestImports...) {
			if tier(imp) == "app" && from == "lib" {
				t.Errorf("the tests of library %s import the application package %s", p.ImportPath, imp)
			}
		}
	}
	if seen < 10 {
		t.Fatalf("go list named %d packages: the module was not found", seen)
	}
}
