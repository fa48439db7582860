package main

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/template"

	"sigs.k8s.io/yaml"
)

// static holds the chart's hand-written files: *.tmpl are Go templates of the
// defaults read from config/ (written without the suffix), the rest are copied.
//
//go:embed all:chart
var static embed.FS

// keepPolicy is the annotation that makes `helm uninstall` (and an upgrade that
// drops the object) leave an object in place.
const keepPolicy = "helm.sh/resource-policy"

// The kustomizations the chart is made of: the install, and the monitoring
// objects the chart adds when monitoring.enabled is set.
const (
	installBase    = "default"
	monitoringBase = "prometheus"
)

// source is one manifest file of config/ and its objects, in file order.
type source struct {
	path    string // relative to config/, slash-separated: "rbac/role.yaml"
	objects []map[string]any
}

// defaults are the values.yaml defaults, read from config/.
type defaults struct {
	ChartVersion, AppVersion                       string
	Namespace                                      string
	ImageRepository, ImagePullPolicy               string
	Replicas                                       string
	Resources, NodeSelector, Affinity, Tolerations string // YAML, ready to follow "key:"
	PriorityClassName                              string
	PrometheusName, PrometheusNamespace            string
	WebhooksFrom, MetricsFrom                      string // YAML, ready to follow "from:"
}

// chartVersion is the chart's own version: raise it with a change of the chart.
const chartVersion = "0.1.0"

// Generate returns the chart's files by path relative to the chart directory.
func Generate(configDir string) (map[string][]byte, error) {
	install, err := readKustomization(configDir, installBase)
	if err != nil {
		return nil, err
	}
	monitoring, err := readKustomization(configDir, monitoringBase)
	if err != nil {
		return nil, err
	}
	g := &generator{values: defaults{ChartVersion: chartVersion}}
	if g.ns, err = namespaceOf(install); err != nil {
		return nil, err
	}
	g.values.Namespace = g.ns
	files := map[string][]byte{}
	for _, set := range []struct {
		sources    []source
		monitoring bool
	}{{install, false}, {monitoring, true}} {
		for _, src := range set.sources {
			name := "templates/" + strings.ReplaceAll(src.path, "/", "_")
			if _, dup := files[name]; dup {
				return nil, fmt.Errorf("config/%s: a second file would be written to %s", src.path, name)
			}
			out, err := g.file(src, set.monitoring)
			if err != nil {
				return nil, err
			}
			files[name] = out
		}
	}
	if g.deployments != 1 {
		return nil, fmt.Errorf("config/%s: %d Deployments, want the operator's only", installBase, g.deployments)
	}
	if g.networkPolicies != 1 {
		return nil, fmt.Errorf("config/%s: %d NetworkPolicies, want the operator's only", installBase, g.networkPolicies)
	}
	if g.prometheusSubjects != 1 {
		return nil, fmt.Errorf("config/%s: %d subjects outside namespace %s, want Prometheus' ServiceAccount only", monitoringBase, g.prometheusSubjects, g.ns)
	}
	if err := g.static(files); err != nil {
		return nil, err
	}
	return files, nil
}

// generator turns config/'s objects into templates: a value the chart's values
// set is replaced by a hole, a placeholder string that survives YAML marshalling
// and is then replaced, line and all, by template text.
type generator struct {
	ns                 string
	holes              []hole
	values             defaults
	deployments        int
	networkPolicies    int
	prometheusSubjects int
}

// hole renders the template lines that replace the line holding it. indent is
// that line's indentation, key the key it has (empty for a hole that is a key).
type hole func(indent, key string) string

var holeRE = regexp.MustCompile(`CHARTGEN_HOLE_(\d+)_`)

func (g *generator) hole(h hole) string {
	g.holes = append(g.holes, h)
	return fmt.Sprintf("CHARTGEN_HOLE_%d_", len(g.holes)-1)
}

// scalar: "key: {{ expr }}".
func scalar(expr string) hole {
	return func(indent, key string) string { return fmt.Sprintf("%s%s: {{ %s }}", indent, key, expr) }
}

// block: "key:" and the YAML of expr below it.
func block(expr string) hole {
	return func(indent, key string) string {
		return fmt.Sprintf("%s%s:\n%s  {{- toYaml %s | nindent %d }}", indent, key, indent, expr, len(indent)+2)
	}
}

// optional: "key:" and the YAML of expr below it, or nothing when expr is empty.
func optional(expr string) hole {
	return func(indent, key string) string {
		return fmt.Sprintf("%s{{- with %s }}\n%s%s:\n%s  {{- toYaml . | nindent %d }}\n%s{{- end }}",
			indent, expr, indent, key, indent, len(indent)+2, indent)
	}
}

// optionalScalar: "key: {{ expr }}", or nothing when expr is empty.
func optionalScalar(expr string) hole {
	return func(indent, key string) string {
		return fmt.Sprintf("%s{{- with %s }}\n%s%s: {{ . | quote }}\n%s{{- end }}", indent, expr, indent, key, indent)
	}
}

// entries (a hole that is a map key): the map's entries from expr, if any.
func entries(expr string) hole {
	return func(indent, _ string) string {
		return fmt.Sprintf("%s{{- with %s }}\n%s{{- toYaml . | nindent %d }}\n%s{{- end }}", indent, expr, indent, len(indent), indent)
	}
}

const (
	namespaceExpr = ".Values.namespace.name | quote"
	imageExpr     = `include "virt-operator.image" . | quote`
)

// file renders one source file's objects as one template file.
func (g *generator) file(src source, monitoring bool) ([]byte, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "# Generated by hack/chartgen from config/%s: edit that file (or\n# hack/chartgen) and run make generate.\n", src.path)
	for i, obj := range src.objects {
		cond, err := g.object(obj, monitoring)
		if err != nil {
			return nil, fmt.Errorf("config/%s, document %d (%s %s): %w", src.path, i+1, obj["kind"], str(meta(obj)["name"]), err)
		}
		if err := g.checkNamespaceTemplated(obj, ""); err != nil {
			return nil, fmt.Errorf("config/%s, document %d (%s %s): %w", src.path, i+1, obj["kind"], str(meta(obj)["name"]), err)
		}
		raw, err := yaml.Marshal(obj)
		if err != nil {
			return nil, err
		}
		text, err := g.fill(escapeBraces(string(raw)))
		if err != nil {
			return nil, fmt.Errorf("config/%s, document %d: %w", src.path, i+1, err)
		}
		if cond != "" {
			fmt.Fprintf(&b, "{{- if %s }}\n---\n%s{{- end }}\n", cond, text)
		} else {
			fmt.Fprintf(&b, "---\n%s", text)
		}
	}
	return []byte(b.String()), nil
}

// object puts the holes into one object and returns the condition it is rendered
// under, if any.
func (g *generator) object(obj map[string]any, monitoring bool) (string, error) {
	m := meta(obj)
	if m == nil {
		return "", errors.New("no metadata")
	}
	cond := ""
	if monitoring {
		cond = ".Values.monitoring.enabled"
	}
	if m["namespace"] == g.ns {
		m["namespace"] = g.hole(scalar(namespaceExpr))
	}
	if labels, ok := m["labels"].(map[string]any); ok && labels["app.kubernetes.io/managed-by"] == "kustomize" {
		labels["app.kubernetes.io/managed-by"] = g.hole(scalar(".Release.Service | quote"))
	}
	switch obj["kind"] {
	case "Namespace":
		// The chart creates it unless namespace.create is false; it stays on
		// uninstall, as everything KubeVirt runs and the KubeVirt CR live in it.
		m["name"] = g.hole(scalar(namespaceExpr))
		annotate(m, keepPolicy, "keep")
		if cond != "" {
			return "", errors.New("a Namespace among the monitoring objects")
		}
		cond = ".Values.namespace.create"
	case "CustomResourceDefinition", "PriorityClass":
		// Deleting the KubeVirt CRD deletes every KubeVirt CR; KubeVirt's pods name
		// the PriorityClass, and the API server refuses new ones without it.
		annotate(m, keepPolicy, "keep")
	case "RoleBinding", "ClusterRoleBinding":
		if err := g.subjects(obj, monitoring); err != nil {
			return "", err
		}
	case "Deployment":
		if monitoring {
			return "", errors.New("a Deployment among the monitoring objects")
		}
		if err := g.deployment(obj); err != nil {
			return "", err
		}
	case "NetworkPolicy":
		if monitoring {
			return "", errors.New("a NetworkPolicy among the monitoring objects")
		}
		if err := g.networkPolicy(obj); err != nil {
			return "", err
		}
		cond = ".Values.networkPolicy.enabled"
	case "ServiceMonitor":
		labels, _ := m["labels"].(map[string]any)
		if labels == nil {
			labels = map[string]any{}
			m["labels"] = labels
		}
		labels[g.hole(entries(".Values.monitoring.serviceMonitor.labels"))] = ""
	}
	return cond, nil
}

// subjects: the operator's ServiceAccounts follow the namespace value; among the
// monitoring objects, a ServiceAccount elsewhere is Prometheus'.
func (g *generator) subjects(obj map[string]any, monitoring bool) error {
	subjects, _ := obj["subjects"].([]any)
	for _, s := range subjects {
		subj, ok := s.(map[string]any)
		if !ok {
			return errors.New("a subject that is not an object")
		}
		switch {
		case subj["namespace"] == g.ns:
			subj["namespace"] = g.hole(scalar(namespaceExpr))
		case monitoring && subj["kind"] == "ServiceAccount":
			g.prometheusSubjects++
			g.values.PrometheusName, g.values.PrometheusNamespace = str(subj["name"]), str(subj["namespace"])
			subj["name"] = g.hole(scalar(".Values.monitoring.prometheus.serviceAccount.name | quote"))
			subj["namespace"] = g.hole(scalar(".Values.monitoring.prometheus.serviceAccount.namespace | quote"))
		}
	}
	return nil
}

// deployment templates the operator's Deployment: replicas, the image (and
// VIRT_OPERATOR_IMAGE, which must name the same), its pull policy, the
// container's resources and the pods' placement and priority.
func (g *generator) deployment(obj map[string]any) error {
	g.deployments++
	name := str(meta(obj)["name"])
	spec, _ := obj["spec"].(map[string]any)
	tmpl, _ := spec["template"].(map[string]any)
	pod, _ := tmpl["spec"].(map[string]any)
	if pod == nil {
		return errors.New("no spec.template.spec")
	}
	g.values.Replicas = "1" // the API's default
	if r, ok := spec["replicas"]; ok {
		g.values.Replicas = fmt.Sprint(r)
	}
	spec["replicas"] = g.hole(scalar(".Values.replicas"))

	containers, _ := pod["containers"].([]any)
	var c map[string]any
	for _, x := range containers {
		if cm, ok := x.(map[string]any); ok && cm["name"] == name {
			c = cm
		}
	}
	if c == nil {
		return fmt.Errorf("no container named %s", name)
	}
	image := str(c["image"])
	repo, tag, err := splitImage(image)
	if err != nil {
		return err
	}
	g.values.ImageRepository, g.values.AppVersion = repo, tag
	c["image"] = g.hole(scalar(imageExpr))
	envImage := false
	env, _ := c["env"].([]any)
	for _, e := range env {
		if em, ok := e.(map[string]any); ok && em["name"] == "VIRT_OPERATOR_IMAGE" {
			if em["value"] != image {
				return fmt.Errorf("VIRT_OPERATOR_IMAGE is %v, the image %s: the install-strategy Job runs the image, so they must match", em["value"], image)
			}
			em["value"] = g.hole(scalar(imageExpr))
			envImage = true
		}
	}
	if !envImage {
		return errors.New("no VIRT_OPERATOR_IMAGE in the container's env")
	}
	g.values.ImagePullPolicy = "IfNotPresent"
	if p, ok := c["imagePullPolicy"]; ok {
		g.values.ImagePullPolicy = str(p)
	}
	c["imagePullPolicy"] = g.hole(scalar(".Values.image.pullPolicy | quote"))

	if g.values.Resources, err = defaultYAML(c["resources"], "{}", 2); err != nil {
		return err
	}
	c["resources"] = g.hole(block(".Values.resources"))

	g.values.PriorityClassName = str(pod["priorityClassName"])
	pod["priorityClassName"] = g.hole(optionalScalar(".Values.priorityClassName"))
	for _, f := range []struct {
		key, empty string
		dst        *string
	}{
		{"nodeSelector", "{}", &g.values.NodeSelector},
		{"affinity", "{}", &g.values.Affinity},
		{"tolerations", "[]", &g.values.Tolerations},
	} {
		if *f.dst, err = defaultYAML(pod[f.key], f.empty, 2); err != nil {
			return err
		}
		pod[f.key] = g.hole(optional(".Values." + f.key))
	}
	return nil
}

// networkPolicy templates the sources of the operator's NetworkPolicy: one
// ingress rule per port, webhooks and metrics, each admitting
// .Values.networkPolicy.<port>.from (every source when empty).
func (g *generator) networkPolicy(obj map[string]any) error {
	g.networkPolicies++
	spec, _ := obj["spec"].(map[string]any)
	rules, _ := spec["ingress"].([]any)
	found := map[string]bool{}
	for _, r := range rules {
		rule, _ := r.(map[string]any)
		ports, _ := rule["ports"].([]any)
		if len(ports) != 1 {
			return fmt.Errorf("an ingress rule with %d ports, want one (webhooks or metrics)", len(ports))
		}
		port := str(ports[0].(map[string]any)["port"])
		var dst *string
		switch port {
		case "webhooks":
			dst = &g.values.WebhooksFrom
		case "metrics":
			dst = &g.values.MetricsFrom
		default:
			return fmt.Errorf("an ingress rule for port %q, want webhooks or metrics", port)
		}
		if found[port] {
			return fmt.Errorf("two ingress rules for port %s", port)
		}
		found[port] = true
		var err error
		if *dst, err = defaultYAML(rule["from"], "[]", 6); err != nil {
			return err
		}
		rule["from"] = g.hole(optional(".Values.networkPolicy." + port + ".from"))
	}
	if len(found) != 2 {
		return fmt.Errorf("ingress rules for %v, want webhooks and metrics", found)
	}
	return nil
}

// splitImage splits repository:tag; an image by digest or without a tag is refused.
func splitImage(image string) (string, string, error) {
	i := strings.LastIndex(image, ":")
	if strings.Contains(image, "@") || i < 0 || strings.Contains(image[i:], "/") {
		return "", "", fmt.Errorf("image %q: want repository:tag", image)
	}
	return image[:i], image[i+1:], nil
}

// defaultYAML is v as the value of a values.yaml key at indent: " {}" inline when
// v is absent or empty, else its YAML on the following lines.
func defaultYAML(v any, empty string, indent int) (string, error) {
	switch x := v.(type) {
	case nil:
		return " " + empty, nil
	case map[string]any:
		if len(x) == 0 {
			return " " + empty, nil
		}
	case []any:
		if len(x) == 0 {
			return " " + empty, nil
		}
	}
	raw, err := yaml.Marshal(v)
	if err != nil {
		return "", err
	}
	pad := strings.Repeat(" ", indent)
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(string(raw), "\n"), "\n") {
		b.WriteString("\n" + pad + l)
	}
	return b.String(), nil
}

// checkNamespaceTemplated fails on a "namespace" field that still names the
// operator's namespace: a field chartgen does not know, which the namespace value
// would not reach.
func (g *generator) checkNamespaceTemplated(v any, at string) error {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if k == "namespace" && x[k] == g.ns {
				return fmt.Errorf("%s.namespace names namespace %s, and chartgen does not template that field: teach it", at, g.ns)
			}
			if err := g.checkNamespaceTemplated(x[k], at+"."+k); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range x {
			if err := g.checkNamespaceTemplated(e, at+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	}
	return nil
}

// fill replaces every line holding a hole by the hole's template text.
func (g *generator) fill(text string) (string, error) {
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		ms := holeRE.FindAllStringSubmatchIndex(line, -1)
		if len(ms) == 0 {
			continue
		}
		if len(ms) > 1 {
			return "", fmt.Errorf("line %q: two holes", line)
		}
		n, _ := strconv.Atoi(line[ms[0][2]:ms[0][3]])
		token := line[ms[0][0]:ms[0][1]]
		body := strings.TrimLeft(line, " ")
		indent := line[:len(line)-len(body)]
		switch {
		case body == token+`: ""`:
			lines[i] = g.holes[n](indent, "")
		case strings.HasSuffix(body, ": "+token) && !strings.HasPrefix(body, "- "):
			lines[i] = g.holes[n](indent, strings.TrimSuffix(body, ": "+token))
		case strings.HasSuffix(body, ": "+token):
			// The first key of a list item: the dash on a line of its own, so
			// the item stays one when the hole renders nothing.
			lines[i] = indent + "-\n" + g.holes[n](indent+"  ", strings.TrimSuffix(strings.TrimPrefix(body, "- "), ": "+token))
		default:
			return "", fmt.Errorf("line %q: a hole must be a whole value or a whole key of a map", line)
		}
	}
	return strings.Join(lines, "\n"), nil
}

// escapeBraces keeps text that config/ has from being read as template actions.
var escapeBraces = strings.NewReplacer("{{", `{{ "{{" }}`, "}}", `{{ "}}" }}`).Replace

// static renders the hand-written files of hack/chartgen/chart into files.
func (g *generator) static(files map[string][]byte) error {
	return fs.WalkDir(static, "chart", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(p, "chart/")
		if strings.HasSuffix(rel, ".tmpl") {
			t, err := template.New(rel).Option("missingkey=error").Funcs(template.FuncMap{"yaml": yamlScalar}).Parse(string(raw))
			if err != nil {
				return err
			}
			var b bytes.Buffer
			if err := t.Execute(&b, g.values); err != nil {
				return err
			}
			raw, rel = b.Bytes(), strings.TrimSuffix(rel, ".tmpl")
		}
		if _, dup := files[rel]; dup {
			return fmt.Errorf("hack/chartgen/%s: written twice", p)
		}
		files[rel] = raw
		return nil
	})
}

// WriteDir makes dir hold exactly files: each written if it differs, and every
// other file there removed (with directories left empty).
func WriteDir(dir string, files map[string][]byte) error {
	var stale []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == dir {
			return fs.SkipAll
		}
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if _, ok := files[filepath.ToSlash(rel)]; !ok {
			stale = append(stale, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, p := range stale {
		if err := os.Remove(p); err != nil {
			return err
		}
		// Remove the directories this left empty, up to dir.
		for d := filepath.Dir(p); d != filepath.Clean(dir); d = filepath.Dir(d) {
			if os.Remove(d) != nil {
				break
			}
		}
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := filepath.Join(dir, filepath.FromSlash(n))
		if old, err := os.ReadFile(p); err == nil && bytes.Equal(old, files[n]) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, files[n], 0o644); err != nil {
			return err
		}
	}
	return nil
}

// yamlScalar is v as a YAML scalar, quoted where YAML needs it.
func yamlScalar(v any) (string, error) {
	raw, err := yaml.Marshal(v)
	return strings.TrimSuffix(string(raw), "\n"), err
}

func meta(obj map[string]any) map[string]any {
	m, _ := obj["metadata"].(map[string]any)
	return m
}

func annotate(m map[string]any, k, v string) {
	a, _ := m["annotations"].(map[string]any)
	if a == nil {
		a = map[string]any{}
		m["annotations"] = a
	}
	a[k] = v
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
