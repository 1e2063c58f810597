package engine

// ResumeWave is resumeWave, for tests: how far from the most urgent
// order a run's cut may fall.
const ResumeWave = resumeWave
