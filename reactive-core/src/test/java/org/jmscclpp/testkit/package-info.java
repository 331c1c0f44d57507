/**
 * jmscclpp's test kit, published as the {@code testkit} jar of jmscclpp-core: an in-memory {@link
 * org.jmscclpp.core.Bootstrap} ({@link org.jmscclpp.testkit.InMemoryBootstrap}), the conformance suite every
 * {@code Bootstrap} implementation must pass ({@link org.jmscclpp.testkit.BootstrapChecks}), groups of
 * communicators and proxies on the host backend, child JVMs for multi-process tests, and reference results for
 * the collectives, and {@link org.jmscclpp.testkit.TrackedResources}, a JUnit extension that closes what a test
 * opened.
 */
@NullMarked
package org.jmscclpp.testkit;

import org.jspecify.annotations.NullMarked;
