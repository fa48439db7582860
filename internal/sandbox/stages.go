package sandbox

import _ "embed"

// stagesYAML is kwok's stage configuration (see stages.yaml for what it holds).
//
//go:embed stages.yaml
var stagesYAML []byte
