package engine

// ResumePass is maxPass, for tests: the most due entries of a queue one
// pass acts on.
const ResumePass = maxPass
