package sim

// Control is one configuration of the simulated roles that the demo runs
// beside the honest one, so a reader sees that calibration's gain depends
// on the quality of its evidence.
type Control struct {
	Name string
	// TeacherModel and EditorModel are the simulated models (with their
	// parameters, see package sim/roles) that play the teacher and the
	// proposer and applier.
	TeacherModel, EditorModel string
	Description               string
}

// Controls are the demo's configurations, the honest one first.
var Controls = []Control{
	{"honest", "sim", "sim", "the default roles: a teacher that misjudges a trait 10% of the time, a proposer that generalises from the disagreement"},
	{"unreliable_teacher", "sim:teacher-error=0.5", "sim", "a teacher that misjudges every trait it notices half of the time"},
	{"random_rules", "sim", "sim:random-rules", "a proposer that ignores the disagreement and proposes plausible review advice at random"},
}
