import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

import org.apache.kafka.common.utils.Exit;

/**
 * Runs Apache Kafka's command-line tools (the tests' oracle) in one long-lived JVM: a JVM started
 * per call costs about a CPU-second, and the suite makes hundreds of calls (tests/kafka_tools.py).
 *
 * <p>Each connection is one call: the tool's main class and its arguments in, then its exit status,
 * standard output and error output back, as a process of its own would give them. Output is told
 * apart by the thread that writes it (and the threads that thread starts), so calls can overlap; an
 * exit through Kafka's Exit class ends the call, not this JVM.
 *
 * <p>Request: int count, then count strings (int length, UTF-8 bytes), the first the main class.
 * Answer: int status, then the standard output and the error output (int length, bytes each).
 */
public final class KafkaToolServer {

    /** Thrown by Kafka's Exit.exit and Exit.halt during a call; an Error, so tools' catch (Exception) let it pass. */
    private static final class ExitCalled extends Error {
        ExitCalled(int status) {
            super("exit " + status, null, false, false);
        }
    }

    /** One call: its output, its error output, and the status of its first exit. */
    private static final class Call {
        final ByteArrayOutputStream[] streams = {new ByteArrayOutputStream(), new ByteArrayOutputStream()};
        volatile Integer exit;
    }

    /** The call the current thread belongs to. */
    private static final InheritableThreadLocal<Call> CALL = new InheritableThreadLocal<>();

    private static final OutputStream DISCARD = OutputStream.nullOutputStream();

    /** System.out or System.err: bytes go to the writing thread's call, or to this JVM's stderr outside calls. */
    private static final class ByCall extends OutputStream {
        private final int which;
        private final OutputStream outside;

        ByCall(int which, OutputStream outside) {
            this.which = which;
            this.outside = outside;
        }

        /** What a call writes after its exit is dropped, as a process's would be. */
        private OutputStream target() {
            Call call = CALL.get();
            return call == null ? outside : call.exit != null ? DISCARD : call.streams[which];
        }

        @Override
        public void write(int b) throws IOException {
            target().write(b);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            target().write(b, off, len);
        }

        @Override
        public void flush() throws IOException {
            target().flush();
        }
    }

    public static void main(String[] args) throws IOException {
        PrintStream announce = System.out;
        PrintStream log = System.err;
        String encoding = System.getProperty("sun.stdout.encoding");
        Charset charset = encoding != null ? Charset.forName(encoding) : Charset.defaultCharset();
        System.setOut(new PrintStream(new ByCall(0, log), true, charset));
        System.setErr(new PrintStream(new ByCall(1, log), true, charset));
        Exit.setExitProcedure(KafkaToolServer::exit);
        Exit.setHaltProcedure(KafkaToolServer::exit);
        // The test process holds this JVM's stdin: when it ends, however it ends, so does this JVM.
        Thread parent = new Thread(() -> {
            try {
                while (System.in.read() >= 0) {
                    continue;
                }
            } catch (IOException e) {
                // ended as by EOF
            }
            Runtime.getRuntime().halt(0);
        }, "parent-watch");
        parent.setDaemon(true);
        parent.start();
        try (ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            announce.println("port " + server.getLocalPort());
            announce.flush();
            while (true) {
                Socket socket = server.accept();
                Thread call = new Thread(() -> serve(socket), "tool-call");
                call.setDaemon(true);
                call.start();
            }
        }
    }

    private static void serve(Socket socket) {
        try (socket) {
            DataInputStream in = new DataInputStream(socket.getInputStream());
            String[] request = new String[in.readInt()];
            for (int i = 0; i < request.length; i++) {
                byte[] bytes = new byte[in.readInt()];
                in.readFully(bytes);
                request[i] = new String(bytes, StandardCharsets.UTF_8);
            }
            Call call = new Call();
            int status = run(request, call);
            DataOutputStream answer = new DataOutputStream(socket.getOutputStream());
            answer.writeInt(status);
            for (ByteArrayOutputStream stream : call.streams) {
                answer.writeInt(stream.size());
                stream.writeTo(answer);
            }
            answer.flush();
        } catch (IOException e) {
            e.printStackTrace();
        }
    }

    /** Kafka's Exit.exit during a call: the first status is the call's, and the call's thread stops here. */
    private static void exit(int status, String message) {
        Call call = CALL.get();
        if (call != null && call.exit == null) {
            call.exit = status;
        }
        throw new ExitCalled(status);
    }

    private static int run(String[] request, Call call) {
        CALL.set(call);
        int status;
        try {
            Class.forName(request[0]).getMethod("main", String[].class)
                .invoke(null, (Object) Arrays.copyOfRange(request, 1, request.length));
            status = 0;
        } catch (InvocationTargetException e) {
            status = failed(e.getCause());
        } catch (Throwable e) {
            status = failed(e);
        } finally {
            System.out.flush();
            System.err.flush();
            CALL.remove();
        }
        return call.exit != null ? call.exit : status;
    }

    /** A main that throws ends as the JVM would end it: the trace on stderr, status 1. */
    private static int failed(Throwable thrown) {
        if (!(thrown instanceof ExitCalled)) {
            thrown.printStackTrace();
        }
        return 1;
    }
}
