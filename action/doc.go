// Package action turns a tool call into a normalised action: its kind, the paths it touches
// with their operations, the argv of every command it runs, and its arguments. The reviewer
// judges actions, never raw tool inputs, so a built-in's name (Bash, Read, files_write) makes no
// difference to what is checked.
package action
