"""The note-taking tutor: answers from the project's notes, and edits, creates or deletes notes
only with consent."""
