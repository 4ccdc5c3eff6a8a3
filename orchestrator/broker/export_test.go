package broker

// ForgetCachedPasswords empties b's cache of verified passwords, so that
// the next check of each pays bcrypt again (benchmarks).
func ForgetCachedPasswords(b *Broker) { b.hook.verify.forget(accounts{}) }
