package org.jmscclpp.samples;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

/** A rank main class for {@link LaunchedRankTest}: prints {@code echo LINE} for each line of stdin until its end. */
public final class StdinEchoMain {

    private StdinEchoMain() {
    }

    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            System.out.println("echo " + line);
        }
    }
}
