package api

import "regexp"

// QueueNamePattern is what a queue's name matches: 1 to 80 letters,
// digits, '_', '.' and '-'.
const QueueNamePattern = `^[A-Za-z0-9_.-]{1,80}$`

var queueNameRE = regexp.MustCompile(QueueNamePattern)

// ValidQueueName reports whether name is a legal queue name
// (QueueNamePattern), so that a caller can refuse a bad one before it
// makes a call.
func ValidQueueName(name string) bool { return queueNameRE.MatchString(name) }
