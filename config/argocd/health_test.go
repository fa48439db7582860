package argocd

import (
	"encoding/json"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
	"sigs.k8s.io/yaml"
)

// health runs the script as Argo CD does: obj is the resource, the script
// returns {status, message}.
func health(t *testing.T, resource string) (status, message string) {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal([]byte(resource), &obj); err != nil {
		t.Fatal(err)
	}
	L := lua.NewState()
	defer L.Close()
	L.SetGlobal("obj", toLua(L, obj))
	if err := L.DoString(HealthLua); err != nil {
		t.Fatalf("the script fails: %v", err)
	}
	hs, ok := L.Get(-1).(*lua.LTable)
	if !ok {
		t.Fatalf("the script returned %s, not a table", L.Get(-1).Type())
	}
	return lua.LVAsString(hs.RawGetString("status")), lua.LVAsString(hs.RawGetString("message"))
}

func toLua(L *lua.LState, v any) lua.LValue {
	switch x := v.(type) {
	case map[string]any:
		t := L.NewTable()
		for k, e := range x {
			t.RawSetString(k, toLua(L, e))
		}
		return t
	case []any:
		t := L.NewTable()
		for _, e := range x {
			t.Append(toLua(L, e))
		}
		return t
	case string:
		return lua.LString(x)
	case float64:
		return lua.LNumber(x)
	case bool:
		return lua.LBool(x)
	}
	return lua.LNil
}

func TestHealthCheck(t *testing.T) {
	cond := func(typ, status, reason string) string {
		return `{"type":"` + typ + `","status":"` + status + `","reason":"` + reason + `","message":"m"}`
	}
	kv := func(phase, observed, target string, conds ...string) string {
		return `{"metadata":{"generation":3},"status":{"phase":"` + phase + `","observedKubeVirtVersion":"` + observed +
			`","targetKubeVirtVersion":"` + target + `","observedDeploymentID":"` + observed + `","targetDeploymentID":"` + target +
			`","conditions":[` + strings.Join(conds, ",") + `]}}`
	}
	cases := []struct {
		name, obj, want, message string
	}{
		{"no status yet", `{"metadata":{}}`, "Progressing", ""},
		{"deployed", kv("Deployed", "v1.9.0", "v1.9.0", cond("Ready", "True", "AllComponentsReady"), cond("Reconciling", "False", ""), cond("Stalled", "False", "")), "Healthy", "v1.9.0"},
		{"updating", kv("Deployed", "v1.8.4", "v1.9.0", cond("Ready", "False", ""), cond("Reconciling", "True", "UpdateInProgress"), cond("Stalled", "False", "")), "Progressing", "UpdateInProgress"},
		{"stalled", kv("Deployed", "v1.8.4", "v1.9.0", cond("Ready", "False", ""), cond("Reconciling", "False", ""), cond("Stalled", "True", "InstallStrategyJobFailed")), "Degraded", "InstallStrategyJobFailed"},
		{"upstream's conditions only, updating (all True)", kv("Deployed", "v1.8.4", "v1.9.0", cond("Available", "True", ""), cond("Progressing", "True", "UpdateInProgress"), cond("Degraded", "True", "UpdateInProgress")), "Progressing", "UpdateInProgress"},
		{"upstream's conditions only, available", kv("Deployed", "v1.9.0", "v1.9.0", cond("Available", "True", "AllComponentsReady"), cond("Progressing", "False", ""), cond("Degraded", "False", "")), "Healthy", ""},
		{"upstream's conditions only, failed", kv("Deploying", "", "v1.9.0", cond("Available", "False", ""), cond("Progressing", "False", ""), cond("Degraded", "True", "DeploymentFailed")), "Degraded", "DeploymentFailed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, message := health(t, c.obj)
			if status != c.want || !strings.Contains(message, c.message) {
				t.Fatalf("health %s %q, want %s with %q", status, message, c.want, c.message)
			}
		})
	}
}

// The argocd-cm patch carries the script itself, unchanged.
func TestConfigMapPatchCarriesTheScript(t *testing.T) {
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal([]byte(ConfigMapPatch), &cm); err != nil {
		t.Fatal(err)
	}
	if got := cm.Data["resource.customizations.health.kubevirt.io_KubeVirt"]; got != HealthLua {
		t.Fatalf("argocd-cm.yaml's script differs from health.lua:\n%s", got)
	}
}
