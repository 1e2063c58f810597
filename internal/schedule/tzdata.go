package schedule

// The zone database goes with the code that reads zones: Lambda's
// provided.al2023 runtime guarantees no /usr/share/zoneinfo, and a
// team's own binaries (pkg/local, its worker) parse schedules too. It
// adds about 450 KB to every binary that links this package (the
// enqueue, worker, resume and admin functions all do, through the
// engine).
import _ "time/tzdata"
