package workloadupdate

// Choice is a VM's own say in how it is moved, read from ChoiceKey.
type Choice string

const (
	// ChoiceDefault: no choice; the CR's methods decide.
	ChoiceDefault Choice = ""
	// ChoiceLiveMigrate: only ever migrate it.
	ChoiceLiveMigrate Choice = "LiveMigrate"
	// ChoiceEvict: restart it (evict) even when it could migrate.
	ChoiceEvict Choice = "Evict"
	// ChoiceNone: never move it.
	ChoiceNone Choice = "None"
	// ChoiceInvalid: a value that means nothing; it is left alone, and said so.
	ChoiceInvalid Choice = "Invalid"
)

// ChoiceOf reads the VMI's choice: the label, else the annotation. The raw value
// is returned for the message of an invalid one.
func ChoiceOf(vmi *VMI) (Choice, string) {
	if !vmi.Has(HasChoice) {
		return ChoiceDefault, ""
	}
	switch raw := vmi.Choice; Choice(raw) {
	case ChoiceLiveMigrate, ChoiceEvict, ChoiceNone:
		return Choice(raw), raw
	default:
		return ChoiceInvalid, raw
	}
}

// methodsFor are the methods that apply to a VMI with this choice: a choice
// narrows the CR's methods to one, and overrides them (the VM's owner knows
// whether it may restart). With no method in the CR nothing moves at all.
func (c Choice) methodsFor(m Methods) Methods {
	if m.None() {
		return m
	}
	switch c {
	case ChoiceLiveMigrate:
		return Methods{LiveMigrate: true}
	case ChoiceEvict:
		return Methods{Evict: true}
	case ChoiceNone, ChoiceInvalid:
		return Methods{}
	}
	return m
}
